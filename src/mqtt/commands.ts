/**
 * MQTT commands (docs/mqtt.md): received topic + payload → a control request, or a refusal.
 *
 * Every received command is audited exactly once (`auditControl`): refusals with the reason, the
 * rest with the control core's outcome. Refused commands never reach the control service:
 * too large (> 1 KiB), retained (a retained command would replay on every reconnect), not a command
 * topic, unknown instance, instance without `ActionsEnabled`, bad payload, no control attached.
 * A command for an instance this process does not own (src/ownership.ts) is left to its owner,
 * which takes and audits it. What any broker client can repeat at will is folded in the audit log
 * (src/control/audit.ts): refusals per kind (and per configured instance, never per topic or
 * payload, which the sender chooses), the first lines of a 10 s window written and the rest counted;
 * a done command is always written, and a settings write's merged requests are audited once.
 */
import type { EventBus } from "../bus.js";
import type { InstanceConfig } from "../config/schema.js";
import { auditControl, isTurnRefusal, type AuditFold, type AuditSink } from "../control/audit.js";
import { acceptedPayloads, commandFromMqtt } from "../control/commands.js";
import { SETTINGS_ACTION, setting, valueFromMqtt } from "../control/settings.js";
import { actionsDisabled } from "../control/service.js";
import type {
  ControlOutcome,
  ControlService,
  ControlSource,
  ControlTarget,
  SettingsOutcome,
} from "../control/types.js";
import { describeError } from "../pdu/errors.js";
import type { Logger } from "../log.js";
import { OWN_ALL, type Ownership } from "../ownership.js";
import type { Topics } from "./topics.js";

export const MAX_COMMAND_PAYLOAD = 1024;

export interface CommandHandlerOptions {
  readonly topics: Topics;
  readonly instances: readonly InstanceConfig[];
  readonly logger: Logger;
  /** Where the audit of every command goes (as `control` events). */
  readonly bus: EventBus;
  /** Whose commands are taken here; default all. */
  readonly ownership?: Ownership;
}

export class CommandHandler {
  readonly #topics: Topics;
  readonly #audit: AuditSink;
  readonly #ownership: Ownership;
  readonly #instances: ReadonlyMap<string, InstanceConfig>;
  #control: ControlService | null = null;

  constructor(options: CommandHandlerOptions) {
    this.#topics = options.topics;
    this.#audit = { logger: options.logger, bus: options.bus };
    this.#ownership = options.ownership ?? OWN_ALL;
    this.#instances = new Map(options.instances.map((i) => [i.id, i]));
  }

  /**
   * Command topics of every instance. Instances without `ActionsEnabled` are subscribed as well,
   * so that a command sent to one is refused in the audit log instead of vanishing unseen.
   */
  subscriptions(): string[] {
    return [...this.#instances.keys()].flatMap((id) => this.#topics.commandSubscriptions(id));
  }

  attach(control: ControlService | null): void {
    this.#control = control;
  }

  /** Handles one received message. Never throws; the returned promise settles after the audit line. */
  async handle(topic: string, payload: Buffer, retained: boolean): Promise<void> {
    const source = { surface: "mqtt", topic } as const;
    const refuse = (
      status: number,
      detail: string,
      instanceId: string | null = null,
      target: ControlTarget | null = null,
      action: string | null = null,
    ) => {
      // Folded per status and configured instance: the topic and payload are the sender's choice.
      const known = instanceId !== null && this.#instances.has(instanceId) ? instanceId : "";
      const fold = { key: `mqtt|${status}|${known}|${action ?? ""}` };
      auditControl(this.#audit, { source, instanceId, target, action, status, detail }, fold);
    };

    if (payload.length > MAX_COMMAND_PAYLOAD) {
      refuse(413, `payload of ${payload.length} bytes is over the ${MAX_COMMAND_PAYLOAD}-byte limit`);
      return;
    }
    const parsed = this.#topics.parseCommand(topic);
    if (!parsed.ok) {
      refuse(400, `not a command topic: ${parsed.reason}`, parsed.instanceId);
      return;
    }
    const { instanceId, target, command } = parsed;
    if (this.#instances.has(instanceId) && !this.#ownership.owns(instanceId)) return;
    const text = payload.toString("utf8").trim();
    if (retained) {
      refuse(400, "retained command ignored (it would repeat on every reconnect)", instanceId, target);
      return;
    }
    const instance = this.#instances.get(instanceId);
    if (instance === undefined) {
      refuse(404, `unknown instance ${JSON.stringify(instanceId)}`, instanceId, target);
      return;
    }
    // The core's rule, asked here so that a refused command never reaches a control service.
    const disabled = actionsDisabled(instance);
    if (disabled !== null) {
      refuse(disabled.status, `instance ${instanceId} has ActionsEnabled: false`, instanceId, target);
      return;
    }
    if (parsed.setting !== undefined) {
      await this.#applySetting(source, instanceId, target, parsed.setting, payload.toString("utf8"));
      return;
    }
    const row = commandFromMqtt(target.kind, command, text);
    if (row === null) {
      const allowed = acceptedPayloads(target.kind, command);
      refuse(400, `payload ${JSON.stringify(text.slice(0, 40))} is not ${allowed}`, instanceId, target);
      return;
    }
    const action = row.name;
    const control = this.#control;
    if (control === null) {
      refuse(503, "control is not available yet", instanceId, target, action);
      return;
    }
    try {
      const outcome = await control.execute({ instanceId, target, action, source });
      const detail = outcome.ok ? undefined : outcome.detail;
      const problem = outcome.ok ? undefined : outcome.problem;
      auditControl(
        this.#audit,
        { source, instanceId, target, action, status: outcome.status, detail, problem, fromCore: true },
        coreFold(instanceId, outcome),
      );
    } catch (error) {
      refuse(500, `control failed: ${describeError(error)}`, instanceId, target, action);
    }
  }

  /** `…/outlets/<i>/<setting>/set`: the payload is the value (checked by the settings table). */
  async #applySetting(
    source: ControlSource,
    instanceId: string,
    target: ControlTarget,
    name: string,
    payload: string,
  ): Promise<void> {
    const audit = (
      status: number,
      detail?: string,
      problem?: string,
      fromCore = false,
      fold: AuditFold | null = { key: `mqtt|${status}|${instanceId}|${SETTINGS_ACTION}` },
      merged?: number,
    ) =>
      auditControl(
        this.#audit,
        { source, instanceId, target, action: SETTINGS_ACTION, status, detail, problem, fromCore, merged },
        fold,
      );
    const row = setting(name);
    const parsed = row === undefined ? null : valueFromMqtt(row, payload);
    if (parsed === null || !parsed.ok) {
      const why = parsed === null ? "is not a setting" : parsed.problem;
      audit(400, `${name} ${JSON.stringify(payload.slice(0, 40))} refused: ${why}; nothing was sent`);
      return;
    }
    const control = this.#control;
    if (control?.applySettings === undefined) {
      audit(503, "settings writes are not available yet");
      return;
    }
    try {
      const outcome = await control.applySettings({
        instanceId,
        target,
        settings: { [name]: parsed.value },
        source,
      });
      audit(
        outcome.status,
        outcome.ok ? undefined : outcome.detail,
        outcome.ok ? undefined : outcome.problem,
        true,
        coreFold(instanceId, outcome),
        outcome.burst?.requests,
      );
    } catch (error) {
      audit(500, `settings write failed: ${describeError(error)}`);
    }
  }
}

/**
 * How the audit line of the core's outcome folds: a done command or settings write is always
 * written, except a request a settings burst merged into its first's write (counted quietly, the
 * first's line says how many); refusals and failures fold per instance, status and problem, the
 * refusals of the outlets' turns and relay protection once per burst.
 */
function coreFold(instanceId: string, outcome: ControlOutcome | SettingsOutcome): AuditFold | null {
  if ("burst" in outcome && outcome.burst !== undefined && !outcome.burst.first) {
    return { key: `mqtt|merged|${instanceId}`, quiet: true };
  }
  if (outcome.ok) return null;
  const key = `mqtt|core|${instanceId}|${outcome.status}|${outcome.problem ?? ""}`;
  return isTurnRefusal(outcome.problem) ? { key, once: true } : { key };
}
