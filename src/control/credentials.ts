/**
 * The login check: for every instance with `ActionsEnabled: true` whose driver can check its
 * credentials (`PduDriver.verifyCredentials`), one login at start, so that a wrong password is
 * reported where the operator looks (the log, `/health/integrations`, the console) naming the
 * variable or key to fix, instead of being found at the first command. Credentials apply at a
 * restart (no live change touches them), so every start checks them once.
 *
 * - Refused by the PDU (wrong password, unknown user): the instance's problem until a later login
 *   works. A command or settings write that succeeds proves the login works, so it clears the
 *   problem (the password was fixed on the PDU instead). Nothing logs in again on its own: a unit
 *   that locks a user out after failed logins is not pushed towards it.
 * - Could not ask (the PDU did not answer): tried again after the instance's next successful poll
 *   that follows a failed one (the PDU is back), else at most once a minute, until it gets an answer.
 *
 * A part of the service (src/lifecycle.ts): from `start` it hears the bus's `snapshot` and
 * `pollFailed` (when to try again) and `control` (a write the core carried out), and tells it
 * `credentials` whenever an instance's problem appears or goes.
 */
import type { EventBus } from "../bus.js";
import { findInstance } from "../config/instance-lookup.js";
import type { Config, InstanceConfig } from "../config/schema.js";
import { instanceVariablePrefix } from "../config/secrets.js";
import type { Logger } from "../log.js";
import type { CredentialsVerdict, PduDriver } from "../pdu/driver.js";

/** Least time between two checks of an instance whose PDU did not answer the login. */
export const RECHECK_MIN_MS = 60_000;

export interface CredentialsCheckOptions {
  /** The configuration in force. */
  readonly config: () => Config;
  readonly drivers: ReadonlyMap<string, PduDriver>;
  readonly bus: EventBus;
  readonly logger: Logger;
  readonly now?: () => number;
}

type State =
  /** `outage`: a poll failed since the last attempt, so the next successful poll tries again at once. */
  | { readonly kind: "unknown"; readonly checkedAt: number | null; readonly outage: boolean }
  | { readonly kind: "ok" }
  | { readonly kind: "refused"; readonly problem: string };

export class CredentialsCheck {
  readonly name = "credentials";
  readonly #o: CredentialsCheckOptions;
  readonly #states = new Map<string, State>();
  readonly #running = new Set<string>();
  /** Aborted on stop: a login in flight is cut. */
  readonly #stop = new AbortController();

  constructor(options: CredentialsCheckOptions) {
    this.#o = options;
  }

  /** Checks every instance that has control and a driver that can check, now (not awaited). */
  start(): void {
    for (const instance of this.#o.config().instances) {
      if (!instance.ActionsEnabled || this.#o.drivers.get(instance.id)?.verifyCredentials === undefined)
        continue;
      this.#states.set(instance.id, { kind: "unknown", checkedAt: null, outage: false });
      this.#run(instance.id);
    }
    this.#o.bus.listen(this, {
      pollFailed: ({ instanceId }) => {
        const state = this.#states.get(instanceId);
        if (state?.kind === "unknown" && !state.outage)
          this.#states.set(instanceId, { ...state, outage: true });
      },
      snapshot: ({ instanceId, fromPoll }) => {
        const state = this.#states.get(instanceId);
        if (state?.kind !== "unknown" || !fromPoll || this.#running.has(instanceId)) return;
        const due =
          state.checkedAt === null || state.outage || this.#now() - state.checkedAt >= RECHECK_MIN_MS;
        if (due) this.#run(instanceId);
      },
      // A command or settings write the core carried out needed the login: it works. The request
      // names the instance as the core found it (findInstance), maybe in another case.
      control: ({ fromCore, status, instanceId }) => {
        if (!fromCore || status !== 200 || instanceId === null) return;
        const id = findInstance(this.#o.config().instances, instanceId)?.id;
        if (id !== undefined && this.#states.has(id)) this.#worked(id);
      },
    });
  }

  /** Why control of the instance will fail (its login was refused), naming what to fix; else null. */
  problem(instanceId: string): string | null {
    const state = this.#states.get(instanceId);
    return state?.kind === "refused" ? state.problem : null;
  }

  /** Cuts a login in flight (the lifecycle has released its bus listeners). */
  stop(): void {
    this.#stop.abort();
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  #run(id: string): void {
    const driver = this.#o.drivers.get(id);
    const signal = this.#stop.signal;
    if (driver?.verifyCredentials === undefined || signal.aborted) return;
    this.#running.add(id);
    driver
      .verifyCredentials(signal)
      .then(
        (verdict) => this.#settle(id, verdict),
        (error: unknown) => this.#o.logger.warn({ instance: id, err: error }, "PDU login check failed"),
      )
      .finally(() => this.#running.delete(id))
      .catch(() => undefined);
  }

  #settle(id: string, verdict: CredentialsVerdict): void {
    if (this.#stop.signal.aborted || !this.#states.has(id)) return;
    if (verdict.ok) {
      this.#worked(id);
      return;
    }
    if (verdict.refused === null) {
      this.#states.set(id, { kind: "unknown", checkedAt: this.#now(), outage: false });
      this.#o.logger.debug(
        { instance: id, error: verdict.reason },
        "PDU login check: no answer; tried again after the next successful poll",
      );
      return;
    }
    const instance = this.#o.config().instances.find((i) => i.id === id);
    const problem = `${verdict.reason}; control of instance ${id} will fail until it is fixed: ${fixFor(id, instance, verdict.refused)}`;
    const before = this.#states.get(id);
    this.#states.set(id, { kind: "refused", problem });
    this.#o.logger.warn({ instance: id, problem }, "PDU login refused: control will fail");
    if (before?.kind !== "refused" || before.problem !== problem) this.#changed(id);
  }

  /** A login worked (the check, or a write that needed one): the instance has no problem. */
  #worked(id: string): void {
    const before = this.#states.get(id);
    if (before === undefined || before.kind === "ok") return;
    this.#states.set(id, { kind: "ok" });
    if (before.kind === "refused") {
      this.#o.logger.info({ instance: id }, "PDU login works again");
      this.#changed(id);
    } else this.#o.logger.debug({ instance: id }, "PDU login checked");
  }

  #changed(id: string): void {
    this.#o.bus.emit("credentials", { instanceId: id, problem: this.problem(id) });
  }
}

/** What to fix, naming the variable or key the refused credential came from. */
function fixFor(id: string, instance: InstanceConfig | undefined, refused: "password" | "user"): string {
  const field = refused === "password" ? "Password" : "Username";
  const source = instance?.credentialSources?.[field] ?? null;
  const where =
    source ?? `${instanceVariablePrefix(id)}_${field.toUpperCase()} or Pdus.${id}.Credentials.${field}`;
  return refused === "password"
    ? `set the PDU's password in ${where}`
    : `check the user name in ${where}, and that the user exists on the PDU with the Control permission`;
}
