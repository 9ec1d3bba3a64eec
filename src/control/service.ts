/**
 * The control core: one implementation of the control rules for both surfaces (REST and MQTT).
 * See docs/control.md.
 *
 * `execute` checks, in this order, and stops at the first that fails (./checks.ts, ./targets.ts):
 *   400 action not allowed for the target kind (or a bad outlet index)
 *   404 unknown instance (exact id, else the one id that matches ignoring case)
 *   409 the instance has ActionsEnabled: false
 *   503 the instance has no snapshot yet (retryAfter = its PollInterval)
 *   404 device, outlet or group not in the latest snapshot; group without member outlets
 *   409 the device (or a group member's device) reports conf.outletControlEnabled: false
 *   409 off or reboot of a `Protected` outlet or group, or of a group with a protected outlet
 *       (overrides, src/pdu/overrides.ts): the whole request, nothing sent
 *   409 off or reboot that would leave a protected asset with no live cord (./asset-guard.ts): the
 *       whole request, nothing sent
 * then writes to the PDU (./writes.ts: each outlet in its turn, ./outlet-turns.ts; a group's members
 * a few at a time, each through its own device's route) and reports (./outcomes.ts):
 *   200 every outlet done; 502 the PDU refused or failed (a group lists which outlets succeeded and
 *   which failed); 502 `outcome-unknown` a reboot/resetStats whose request may have reached the PDU
 *   without an answer, or any write the service stopped while it ran; 504 nothing answered in
 *   time; 409 superseded by a later on/off, or a reboot already running, or the outlet switched less
 *   than its instance's `RelayProtection` ago (nothing sent); 503 waited too long behind
 *   other commands for the outlet (`expired`), or the service is stopping (nothing was sent).
 * Names a PDU supplies that are not safe names (src/names.ts) are never controlled.
 * After a successful on/off the commanded state is latched in the store (per outlet, in its turn)
 * and one early poll is requested. The core does not write the audit line: the surfaces do.
 * `applySettings` writes labels, delays and the power-on action with the same checks and turns
 * (./settings-writes.ts). The stop and the writes in flight are ./stopping.ts. Among several
 * replicas every PDU write waits for the cluster's grant (./writes.ts): a refused grant is 503
 * `not-held`, nothing sent; a reboot or resetStats carries once-only ids from the command's id.
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../log.js";
import { OWN_ALL, type Ownership } from "../ownership.js";
import type { SnapshotStore } from "../poller/store.js";
import { assetProtection, OffsInFlight, type AssetBookSource } from "./asset-guard.js";
import { describeTarget } from "./audit.js";
import { checkAction, polledInstance, protectedRefusal } from "./checks.js";
import type { CommandDriver, CommandRow } from "./commands.js";
import { DEFAULT_REBOOT_DELAY_S, OutletTurns, type OutletTurnsOptions } from "./outlet-turns.js";
import {
  commandOutcome,
  controlUnavailable,
  stoppingRefusal,
  type Refusal,
  type Written,
} from "./outcomes.js";
import { SettingsBursts } from "./settings-bursts.js";
import { applySettings, type SettingsWriteDeps } from "./settings-writes.js";
import { STOP_BUDGET_MS, WritesInFlight } from "./stopping.js";
import { planCommand, type PlannedOutlet } from "./targets.js";
import type {
  ControlOutcome,
  ControlTarget,
  ControlRequest,
  ControlService,
  SettingsOutcome,
  SettingsRequest,
  WriteFence,
} from "./types.js";
import { Writer } from "./writes.js";

export { actionsDisabled } from "./checks.js";
export { NOT_HELD_RETRY_AFTER, STOPPING_RETRY_AFTER } from "./outcomes.js";
export { STOP_BUDGET_MS } from "./stopping.js";
export { COMMAND_ID_PATTERN, GROUP_CONCURRENCY, REPOLL_DELAY_MS } from "./writes.js";

/** The writes the core uses (the command table's driver calls); every PduDriver fits. */
export type ControlClient = CommandDriver;

export interface ControlDeps {
  /** Read on every request: the app passes a getter, so live configuration changes apply. */
  readonly config: Config;
  readonly store: SnapshotStore;
  readonly clients: ReadonlyMap<string, ControlClient>;
  /** Which instances this process may write to now (src/ownership.ts); default all. */
  readonly ownership?: Ownership;
  /**
   * Among several replicas: the grant every PDU write waits for (the cluster's fencing,
   * docs/cluster.md); reboot and resetStats pass their once-only id. Absent: one process, no fence.
   */
  readonly fence?: WriteFence;
  pollSoon(instanceId: string, delayMs?: number): void;
  readonly logger: Logger;
  /**
   * Aborted: a hard stop. Nothing new is sent and in-flight writes are cut and reported as outcome
   * unknown (never as done, never as "retry"). {@link ControlCore.stop} is the graceful way.
   */
  readonly signal?: AbortSignal;
  /** The outlets' turns' settings (tests shorten the 30 s wait limit). */
  readonly discipline?: OutletTurnsOptions;
  /**
   * The assets' book as the assets part keeps it, for the protected-asset rule (./asset-guard.ts);
   * absent or null: no assets, nothing guarded.
   */
  readonly assets?: AssetBookSource;
}

export class ControlCore implements ControlService {
  readonly #deps: ControlDeps;
  readonly #logger: Logger;
  readonly #turns: OutletTurns;
  readonly #inFlight: WritesInFlight;
  readonly #writer: Writer;
  readonly #bursts = new SettingsBursts();
  /** Offs let through whose end the assets' book has not seen (the protected-asset rule). */
  readonly #offs: OffsInFlight;

  constructor(deps: ControlDeps) {
    this.#deps = deps;
    this.#offs = new OffsInFlight((id) => deps.store.get(id)?.lastSuccessUtc ?? null);
    this.#logger = deps.logger.child({ component: "control" });
    const turns = new OutletTurns(deps.discipline);
    this.#turns = turns;
    this.#inFlight = new WritesInFlight(this.#logger, deps.signal, () => turns.stop());
    this.#writer = new Writer(
      {
        store: deps.store,
        pollSoon: (id, delayMs) => deps.pollSoon(id, delayMs),
        logger: this.#logger,
        ...(deps.fence === undefined ? {} : { fence: deps.fence }),
      },
      turns,
      this.#inFlight,
    );
  }

  /**
   * Graceful stop: new commands are refused and waiting ones end unsent (503); writes in flight get
   * `budgetMs` to finish and are then cut, and reported as outcome unknown, never as "retry".
   */
  async stop(budgetMs = STOP_BUDGET_MS): Promise<void> {
    const stopped = this.#inFlight.stop(budgetMs);
    this.#turns.stop();
    await stopped;
  }

  async execute(request: ControlRequest): Promise<ControlOutcome> {
    const { target } = request;
    // 1. the action for this kind of target
    const row = checkAction(target, request.action);
    if ("status" in row) return row;
    const action = row.name;

    // 2. the instance, 3. control allowed, 4. polled at least once
    const polled = polledInstance(this.#deps.config, this.#deps.store, request.instanceId);
    if ("status" in polled) return polled;
    const { id, snapshot } = polled;

    // 5. the target in the latest snapshot, and whether it is protected
    const planned = planCommand(snapshot, target, id, row.needs);
    if ("status" in planned) return planned;
    const { resolved, targets } = planned;
    const guarded = row.refusedWhenProtected
      ? protectedRefusal(snapshot, resolved, targets, action, id)
      : null;
    if (guarded !== null) return guarded;
    // 5b. no protected asset left with no live cord (an asset's own confirmed reboot aside)
    const cutting = row.refusedWhenProtected ? this.#assetGuard(request, id, resolved, targets) : null;
    if (cutting !== null) return cutting;
    const client = this.#client(id);
    if (client === undefined) return controlUnavailable(id);
    if (this.#inFlight.stopping) {
      return stoppingRefusal(`${action} on ${describeTarget(resolved)} of instance ${id}`);
    }

    // 6. the writes (an off counted in flight from its check, with no wait between, to its end)
    const where = { instance: id, target: describeTarget(resolved), action };
    this.#logger.debug({ ...where, outlets: targets.length }, "control: writing");
    if (row.refusedWhenProtected) this.#offs.begin(id, targets);
    const written = await this.#writer.writeCommand(id, client, targets, row, {
      commandId: request.commandId,
      once: request.once === true,
      relayIntervalMs: relayIntervalMs(this.#deps.config, id),
    });
    if (row.refusedWhenProtected) this.#offs.end(id, written, (w) => offMsOf(row, targets, w));

    // 7. the outcome (an outcome-unknown write is polled soon too: the PDU's report tells)
    this.#writer.repollAfter(id, written);
    const outcome = commandOutcome(id, resolved, row, written);
    this.#logger.debug({ ...where, status: outcome.status }, "control: done");
    return outcome;
  }

  /** The protected-asset rule for an off or reboot of `targets` (./asset-guard.ts). */
  #assetGuard(
    request: ControlRequest,
    id: string,
    resolved: ControlTarget,
    targets: readonly PlannedOutlet[],
  ): Refusal | null {
    return assetProtection(
      this.#deps.assets?.() ?? null,
      id,
      targets,
      `${request.action} on ${describeTarget(resolved)} of instance ${id}`,
      {
        cycling: request.assetCycle === true ? request.asset : undefined,
        inFlight: this.#offs.offs(),
      },
    );
  }

  /** A settings write (./settings-writes.ts). */
  applySettings(request: SettingsRequest): Promise<SettingsOutcome> {
    return applySettings(this.#settingsDeps(), request);
  }

  /** The instance's driver, while this process owns the instance; else undefined (503). */
  #client(id: string): ControlClient | undefined {
    return (this.#deps.ownership ?? OWN_ALL).owns(id) ? this.#deps.clients.get(id) : undefined;
  }

  #settingsDeps(): SettingsWriteDeps {
    const deps = this.#deps;
    return {
      config: deps.config,
      store: deps.store,
      client: (id) => this.#client(id),
      logger: this.#logger,
      writer: this.#writer,
      inFlight: this.#inFlight,
      bursts: this.#bursts,
      assets: () => this.#deps.assets?.() ?? null,
      offsInFlight: () => this.#offs.offs(),
    };
  }
}

/**
 * How long a write done keeps its outlet off beyond its answer: a reboot's delay (the PDU switches
 * it back on later; at least 5 s when the PDU does not say), nothing for an off (it is latched).
 */
function offMsOf(row: CommandRow, targets: readonly PlannedOutlet[], w: Written): number {
  if (row.latches !== null) return 0;
  const planned = targets.find((t) => t.deviceId === w.target.deviceId && t.index === w.target.index);
  return Math.max(DEFAULT_REBOOT_DELAY_S, planned?.rebootDelay ?? 0) * 1000;
}

/** The instance's relay protection (ms): the least time between two state changes of one outlet. */
function relayIntervalMs(config: Config, id: string): number {
  const seconds = config.instances.find((i) => i.id === id)?.RelayProtection ?? 0;
  return Math.round(seconds * 1000);
}

export function createControlService(deps: ControlDeps): ControlCore {
  return new ControlCore(deps);
}
