/**
 * The control core: one implementation of the control rules for both surfaces (REST and MQTT).
 * See docs/control.md.
 *
 * `execute` checks, in this order, and stops at the first that fails:
 *   400 action not allowed for the target kind (or a bad outlet index)
 *   404 unknown instance (exact id, else the one id that matches ignoring case)
 *   409 the instance has ActionsEnabled: false
 *   503 the instance has no snapshot yet (retryAfter = its PollInterval)
 *   404 device, outlet or group not in the latest snapshot; group without member outlets
 *   409 the device (or a group member's device) reports conf.outletControlEnabled: false
 * then writes to the PDU (each outlet under its own lock, a group's members at most
 * GROUP_CONCURRENCY at a time, each through its own device's route) and reports:
 *   200 every outlet done; 502 the PDU refused or failed (a group lists which outlets succeeded and
 *   which failed); 504 nothing answered in time; 503 the service is stopping.
 * After a successful on/off the commanded state is latched in the store (per outlet, under its lock)
 * and one early poll is requested. The core does not write the audit line: the surfaces do.
 */
import type { Config, InstanceConfig } from "../config/schema.js";
import type { Logger } from "../log.js";
import type { GeistClient, OutletTarget } from "../pdu/client.js";
import { describeError, isPduError } from "../pdu/errors.js";
import { findDevice, findGroup, type Snapshot } from "../pdu/model.js";
import type { SnapshotStore } from "../poller/store.js";
import { describeTarget } from "./audit.js";
import { KeyedLock } from "./lock.js";
import {
  GROUP_ACTIONS,
  OUTLET_ACTIONS,
  type ControlOutcome,
  type ControlRequest,
  type ControlService,
  type ControlTarget,
  type OutletControlAction,
  type OutletResult,
} from "./types.js";

/** Member outlets of a group written at the same time. */
export const GROUP_CONCURRENCY = 8;
/** Delay of the early poll requested after a command (ms): the PDU has acted by then. */
export const REPOLL_DELAY_MS = 1000;
/** Retry-After (s) of the 503 answered while the service stops. */
export const STOPPING_RETRY_AFTER = 5;

/** The writes the core uses; every GeistClient fits. */
export type ControlClient = Pick<GeistClient, "controlOutlet" | "resetOutletEnergy">;

export interface ControlDeps {
  readonly config: Config;
  readonly store: SnapshotStore;
  readonly clients: ReadonlyMap<string, ControlClient>;
  pollSoon(instanceId: string, delayMs?: number): void;
  readonly logger: Logger;
  /** Aborted on shutdown: in-flight writes stop and are reported as failed (never as done). */
  readonly signal?: AbortSignal;
}

type Refusal = Extract<ControlOutcome, { ok: false }>;

/** Result of one outlet write. */
type Written =
  | { readonly target: OutletTarget; readonly ok: true }
  | {
      readonly target: OutletTarget;
      readonly ok: false;
      /** `stopped`: the service's signal aborted it (or it never started because of that). */
      readonly kind: "timeout" | "failed" | "stopped";
      readonly error: string;
    };

const refuse = (
  status: Refusal["status"],
  title: string,
  detail: string,
  extra: { retryAfter?: number; outlets?: readonly OutletResult[] } = {},
): Refusal => ({ ok: false, status, title, detail, ...extra });

const quote = (s: string): string => JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);

/** At most `max` items, then how many more. */
function listSome(items: readonly string[], max = 10): string {
  if (items.length === 0) return "none";
  const shown = items.slice(0, max).join(", ");
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}

const outletName = (t: { deviceId: string; index: number }): string => `${t.deviceId}/${t.index}`;

/** Runs `fn` over `items`, at most `limit` at a time; results in input order. `fn` must not reject. */
async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  const queue = items.entries();
  const worker = async (): Promise<void> => {
    // Every worker pulls from the same iterator, so each item is taken exactly once.
    for (const [i, item] of queue) results[i] = await fn(item);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export class ControlCore implements ControlService {
  readonly #deps: ControlDeps;
  readonly #logger: Logger;
  readonly #locks = new KeyedLock();

  constructor(deps: ControlDeps) {
    this.#deps = deps;
    this.#logger = deps.logger.child({ component: "control" });
  }

  async execute(request: ControlRequest): Promise<ControlOutcome> {
    const { target } = request;
    // 1. the action for this kind of target
    const badAction = checkAction(target, request.action);
    if (badAction !== null) return badAction;
    const action = request.action as OutletControlAction;

    // 2. the instance
    const instance = this.#instance(request.instanceId);
    if (instance === undefined) {
      const known = this.#deps.config.instances.map((i) => i.id);
      return refuse(
        404,
        "Unknown instance",
        `no PDU instance ${quote(request.instanceId)} is configured; configured instances: ${listSome(known)}`,
      );
    }
    const id = instance.id;

    // 3. control allowed
    if (!instance.ActionsEnabled) {
      return refuse(
        409,
        "Control disabled",
        `control of instance ${id} is disabled: set Pdus.${id}.ActionsEnabled: true (with the PDU's Credentials) to allow it`,
      );
    }

    // 4. polled at least once
    const snapshot = this.#deps.store.get(id)?.snapshot ?? null;
    if (snapshot === null) {
      const retryAfter = Math.max(1, Math.ceil(instance.PollInterval));
      return refuse(
        503,
        "Not polled yet",
        `instance ${id} has not been polled successfully yet, so its outlets are not known; try again in ${retryAfter} s`,
        { retryAfter },
      );
    }

    // 5. the target in the latest snapshot
    const planned = plan(snapshot, target, id);
    if ("status" in planned) return planned;
    const { resolved, targets } = planned;
    const client = this.#deps.clients.get(id);
    if (client === undefined) {
      const detail = `control of instance ${id} is not available in this process`;
      return refuse(503, "Control unavailable", detail, { retryAfter: STOPPING_RETRY_AFTER });
    }
    if (this.#stopping()) {
      return refuse(
        503,
        "Service stopping",
        `the service is stopping: ${action} on ${describeTarget(resolved)} of instance ${id} was not sent; try again once it is back`,
        { retryAfter: STOPPING_RETRY_AFTER },
      );
    }

    // 6. the writes
    this.#logger.debug(
      { instance: id, target: describeTarget(resolved), action, outlets: targets.length },
      "control: writing",
    );
    const written = await mapBounded(targets, GROUP_CONCURRENCY, (t) =>
      this.#writeOne(id, client, t, action),
    );

    // 7. the outcome
    if (written.some((w) => w.ok)) this.#deps.pollSoon(id, REPOLL_DELAY_MS);
    const outcome = conclude(id, resolved, action, written);
    this.#logger.debug(
      { instance: id, target: describeTarget(resolved), action, status: outcome.status },
      "control: done",
    );
    return outcome;
  }

  #stopping(): boolean {
    return this.#deps.signal?.aborted === true;
  }

  /** Exact id, else the one configured id equal ignoring case (the loader forbids two such ids). */
  #instance(requested: string): InstanceConfig | undefined {
    const instances = this.#deps.config.instances;
    const lower = requested.toLowerCase();
    return instances.find((i) => i.id === requested) ?? instances.find((i) => i.id.toLowerCase() === lower);
  }

  /**
   * One outlet's write under that outlet's lock. The latch (or its removal, after a failed on/off)
   * happens under the lock too, so the store ends with the state of the last command written.
   */
  #writeOne(
    instanceId: string,
    client: ControlClient,
    target: OutletTarget,
    action: OutletControlAction,
  ): Promise<Written> {
    const key = `${instanceId}\u0000${target.deviceId}\u0000${target.index}`;
    return this.#locks.run(key, async (): Promise<Written> => {
      const result = await this.#write(client, target, action);
      if (action === "on" || action === "off") {
        if (result.ok) this.#deps.store.latch(instanceId, target.deviceId, target.index, action);
        // The write may or may not have happened: show what the PDU reports, not an older command.
        else this.#deps.store.unlatch(instanceId, target.deviceId, target.index);
      }
      return result;
    });
  }

  async #write(client: ControlClient, target: OutletTarget, action: OutletControlAction): Promise<Written> {
    const signal = this.#deps.signal;
    if (this.#stopping()) return { target, ok: false, kind: "stopped", error: "the service is stopping" };
    try {
      if (action === "resetStats") await client.resetOutletEnergy(target, signal);
      else await client.controlOutlet(target, action, signal);
      return { target, ok: true };
    } catch (e) {
      if (this.#stopping()) {
        return { target, ok: false, kind: "stopped", error: "the service is stopping: write interrupted" };
      }
      const kind = isPduError(e) && e.kind === "timeout" ? "timeout" : "failed";
      this.#logger.debug(
        { outlet: outletName(target), action, error: describeError(e) },
        "control: write failed",
      );
      return { target, ok: false, kind, error: describeError(e) };
    }
  }
}

export function createControlService(deps: ControlDeps): ControlService {
  return new ControlCore(deps);
}

function checkAction(target: ControlTarget, action: string): Refusal | null {
  const allowed: readonly string[] = target.kind === "outlet" ? OUTLET_ACTIONS : GROUP_ACTIONS;
  if (!allowed.includes(action)) {
    const note = target.kind === "group" && action === "resetStats" ? " (resetStats is outlet-only)" : "";
    return refuse(
      400,
      "Action not allowed",
      `action ${quote(action)} is not allowed for ${target.kind === "outlet" ? "an outlet" : "a group"}: use one of ${allowed.join(", ")}${note}`,
    );
  }
  if (target.kind === "outlet" && (!Number.isSafeInteger(target.index) || target.index < 0)) {
    return refuse(
      400,
      "Bad outlet index",
      `outlet index must be a 0-based integer, got ${String(target.index)}`,
    );
  }
  return null;
}

/** What to write. `resolved` spells the target as the PDU does (a group key's case). */
interface Plan {
  readonly resolved: ControlTarget;
  /** Each outlet with its device's route (so a OneView member's outlet goes through its proxy port). */
  readonly targets: readonly OutletTarget[];
}

/** The outlets to write, or a 404 naming what is missing from the latest snapshot. */
function plan(snapshot: Snapshot, target: ControlTarget, id: string): Plan | Refusal {
  if (target.kind === "outlet") {
    const device = findDevice(snapshot, target.deviceId);
    if (device === undefined) {
      return refuse(
        404,
        "Unknown device",
        `device ${quote(target.deviceId)} is not in the latest snapshot of instance ${id}; its devices: ${listSome(snapshot.devices.map((d) => d.id))}`,
      );
    }
    if (!device.outlets.some((o) => o.index === target.index)) {
      const indexes = device.outlets.map((o) => o.index);
      const range = indexes.length === 0 ? "none" : `${indexes[0]}-${indexes[indexes.length - 1]}`;
      return refuse(
        404,
        "Unknown outlet",
        `device ${device.id} of instance ${id} has no outlet ${target.index} (indexes are 0-based; its outlets: ${range})`,
      );
    }
    if (!device.outletControlEnabled) return controlDisabledOnPdu([device.id], id);
    return { resolved: target, targets: [{ deviceId: device.id, index: target.index, route: device.route }] };
  }
  const group = findGroup(snapshot, target.groupKey);
  if (group === undefined) {
    const groups = snapshot.groups.map((g) => g.key);
    const known =
      groups.length === 0
        ? "it has no groups (groups exist only on a OneView cluster master)"
        : `its groups: ${listSome(groups)}`;
    return refuse(
      404,
      "Unknown group",
      `group ${quote(target.groupKey)} is not in the latest snapshot of instance ${id}; ${known}`,
    );
  }
  if (group.members.length === 0) {
    return refuse(
      404,
      "Empty group",
      `group ${group.key} of instance ${id} has no member outlets, so there is nothing to switch; assign outlets to it on the PDU`,
    );
  }
  const targets: OutletTarget[] = [];
  for (const member of group.members) {
    const device = findDevice(snapshot, member.deviceId);
    if (device === undefined || !device.outlets.some((o) => o.index === member.index)) {
      return refuse(
        404,
        "Unknown outlet",
        `group ${group.key} of instance ${id} names outlet ${outletName(member)}, which is not in the latest snapshot; nothing was sent`,
      );
    }
    targets.push({ deviceId: device.id, index: member.index, route: device.route });
  }
  const disabled = [
    ...new Set(
      targets.flatMap((t) =>
        findDevice(snapshot, t.deviceId)?.outletControlEnabled === false ? [t.deviceId] : [],
      ),
    ),
  ];
  if (disabled.length > 0) return controlDisabledOnPdu(disabled, id, group.key);
  return { resolved: { kind: "group", groupKey: group.key }, targets };
}

/** 409: the PDU itself reports `conf.outletControlEnabled: false` for these devices; nothing is sent. */
function controlDisabledOnPdu(deviceIds: readonly string[], id: string, groupKey?: string): Refusal {
  const which = deviceIds.length === 1 ? `device ${deviceIds[0]}` : `devices ${listSome([...deviceIds])}`;
  const scope = groupKey === undefined ? "" : `group ${groupKey} includes outlets of ${which}, and `;
  return refuse(
    409,
    "Control disabled on the PDU",
    `${scope}outlet control is disabled on the PDU itself: ${which} of instance ${id} reports conf.outletControlEnabled: false; enable outlet control in the PDU's own settings; nothing was sent`,
  );
}

function conclude(
  id: string,
  target: ControlTarget,
  action: OutletControlAction,
  written: readonly Written[],
): ControlOutcome {
  const outlets: OutletResult[] = written.map((w) =>
    w.ok
      ? { deviceId: w.target.deviceId, index: w.target.index, ok: true }
      : { deviceId: w.target.deviceId, index: w.target.index, ok: false, error: w.error },
  );
  const failed = written.filter((w): w is Extract<Written, { ok: false }> => !w.ok);
  if (failed.length === 0) return { ok: true, status: 200, instanceId: id, target, action, outlets };

  const what = `${action} on ${describeTarget(target)} of instance ${id}`;
  const extra = target.kind === "group" ? { outlets } : {};
  const succeeded = written.filter((w) => w.ok).map((w) => outletName(w.target));
  // An outlet: its one error. A group: every failure and every success, never a silent partial.
  const why =
    target.kind === "group"
      ? `failed on ${failed.length} of ${written.length} outlets: ${describeFailures(failed)}; succeeded on: ${listSome(succeeded, 64)}`
      : (failed[0]?.error ?? "failed");

  if (failed.some((f) => f.kind === "stopped")) {
    return refuse(503, "Service stopping", `the service is stopping, ${what} was not completed: ${why}`, {
      ...extra,
      retryAfter: STOPPING_RETRY_AFTER,
    });
  }
  if (succeeded.length === 0 && failed.every((f) => f.kind === "timeout")) {
    return refuse(
      504,
      "PDU did not answer in time",
      `${what}: the PDU did not answer in time (${why}); it may or may not have acted, check the state and try again`,
      extra,
    );
  }
  return refuse(502, "PDU refused or failed", `${what}: ${why}`, extra);
}

/** Failed outlets grouped by error: `A/0, A/1 (HTTP 500 from ...); B/3 (no answer ...)`. */
function describeFailures(failed: readonly Extract<Written, { ok: false }>[]): string {
  const byError = new Map<string, string[]>();
  for (const f of failed) {
    const names = byError.get(f.error) ?? [];
    names.push(outletName(f.target));
    byError.set(f.error, names);
  }
  return [...byError].map(([error, names]) => `${listSome(names, 64)} (${error})`).join("; ");
}
