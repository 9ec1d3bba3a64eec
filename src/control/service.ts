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
 *   409 off or reboot of a `Protected` outlet or group, or of a group with a protected outlet
 *       (overrides, src/pdu/overrides.ts): the whole request, nothing sent
 * then writes to the PDU (each outlet under the per-outlet discipline of ./discipline.ts, a group's
 * members at most GROUP_CONCURRENCY at a time, each through its own device's route) and reports:
 *   200 every outlet done; 502 the PDU refused or failed (a group lists which outlets succeeded and
 *   which failed); 502 `outcome-unknown` a reboot/resetStats whose request may have reached the PDU
 *   without an answer, or any write the service stopped while it ran; 504 nothing answered in
 *   time; 409 superseded by a later on/off, or a reboot already running; 503 waited too long behind
 *   other commands for the outlet (`expired`), or the service is stopping (nothing was sent).
 * Names a PDU supplies that are not safe names (src/pdu/names.ts) are never controlled.
 * After a successful on/off the commanded state is latched in the store (per outlet, under its lock)
 * and one early poll is requested. The core does not write the audit line: the surfaces do.
 * `applySettings` writes labels, delays and the power-on action with the same checks and turns
 * (docs/control.md, "Settings writes").
 */
import { randomBytes } from "node:crypto";
import { FencingError } from "../cluster/elector.js";
import type { Config, InstanceConfig } from "../config/schema.js";
import type { Logger } from "../log.js";
import { OWN_ALL, type Ownership } from "../ownership.js";
import type { LabelTarget, OutletSettings, OutletTarget } from "../pdu/driver.js";
import { describeError, isPduError } from "../pdu/errors.js";
import { findDevice, findGroup, findOutlet, type Snapshot } from "../pdu/model.js";
import { nameProblem, quoteName } from "../pdu/names.js";
import type { SnapshotStore } from "../poller/store.js";
import { describeTarget } from "./audit.js";
import { command, commandsFor, type CommandDriver, type CommandRow } from "./commands.js";
import {
  OutletDiscipline,
  type DisciplineAction,
  type DisciplineOptions,
  type Refused,
} from "./discipline.js";
import { protectedSettingsProblem, SETTING_NAMES, settingsProblem, SETTINGS_ACTION } from "./settings.js";
import {
  type ControlOutcome,
  type ControlProblem,
  type ControlRequest,
  type ControlService,
  type ControlTarget,
  type OutletControlAction,
  type OutletResult,
  type SettingsOutcome,
  type SettingsRequest,
  type SettingsTarget,
  type WriteFence,
  type WriteGrant,
} from "./types.js";

/** Member outlets of a group written at the same time. */
export const GROUP_CONCURRENCY = 8;
/** A caller's command id (ControlRequest.commandId): room is left for the per-outlet suffix. */
export const COMMAND_ID_PATTERN = /^[A-Za-z0-9_-]{1,48}$/;
/** Retry-After (s) of a 503 `not-held`: the instance's lease changes hands within a round or so. */
export const NOT_HELD_RETRY_AFTER = 2;

/** Delay of the early poll requested after a command (ms): the PDU has acted by then. */
export const REPOLL_DELAY_MS = 1000;
/** Retry-After (s) of the 503 answered while the service stops. */
export const STOPPING_RETRY_AFTER = 5;
/** How long a stop lets writes in flight finish before they are cut and reported outcome unknown (ms). */
export const STOP_BUDGET_MS = 2000;

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
  /** The per-outlet discipline's settings (tests shorten the 30 s wait limit). */
  readonly discipline?: DisciplineOptions;
}

type Refusal = Extract<ControlOutcome, { ok: false }>;

/** An outlet to write, with what the discipline needs to know of it. */
interface PlannedOutlet extends OutletTarget {
  /** The outlet's reboot delay as the PDU reports it (s), or null. */
  readonly rebootDelay: number | null;
}

/**
 * Why one outlet was not done: `timeout` no answer in time; `failed` the PDU refused or failed;
 * `unknown` it may or may not have been carried out (never re-sent); `refused` the PDU or its family
 * refused it and nothing was done; `stopped` not sent, the service is stopping; `superseded`,
 * `busy`, `expired` not sent, refused by the per-outlet discipline; `fenced` not sent, this replica
 * may not write to the instance now (the cluster's fencing refused the grant, or it came too late).
 */
type FailureKind =
  "timeout" | "failed" | "unknown" | "refused" | "stopped" | "superseded" | "busy" | "expired" | "fenced";

/** Result of one outlet write. */
type Written =
  | { readonly target: OutletTarget; readonly ok: true }
  | {
      readonly target: OutletTarget;
      readonly ok: false;
      readonly kind: FailureKind;
      readonly error: string;
    };

const refuse = (
  status: Refusal["status"],
  title: string,
  detail: string,
  extra: { retryAfter?: number; outlets?: readonly OutletResult[]; problem?: ControlProblem } = {},
): Refusal => ({ ok: false, status, title, detail, ...extra });

const quote = (s: string): string => quoteName(s);

/** At most `max` items, then how many more. */
function listSome(items: readonly string[], max = 10): string {
  if (items.length === 0) return "none";
  const shown = items.slice(0, max).join(", ");
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}

const outletName = (t: { deviceId: string; index: number }): string => `${t.deviceId}/${t.index}`;

/** An outlet's key in the discipline: its commands and its settings writes take turns under it. */
const outletKey = (instanceId: string, deviceId: string, index: number): string =>
  `${instanceId}\u0000${deviceId}\u0000${index}`;

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
  readonly #discipline: OutletDiscipline;
  /** Aborted when a stop's budget ran out (or the hard-stop signal fired): cuts in-flight writes. */
  readonly #cut = new AbortController();
  /** Writes in flight (settle, never reject). */
  readonly #inflight = new Set<Promise<unknown>>();
  #closing = false;

  constructor(deps: ControlDeps) {
    this.#deps = deps;
    this.#logger = deps.logger.child({ component: "control" });
    this.#discipline = new OutletDiscipline(deps.discipline);
    const hard = deps.signal;
    if (hard !== undefined) {
      const onAbort = () => {
        this.#discipline.stop();
        this.#cut.abort(hard.reason);
      };
      if (hard.aborted) onAbort();
      else hard.addEventListener("abort", onAbort, { once: true });
    }
  }

  /**
   * Graceful stop: new commands are refused and waiting ones end unsent (503); writes in flight get
   * `budgetMs` to finish and are then cut, and reported as outcome unknown, never as "retry".
   */
  async stop(budgetMs = STOP_BUDGET_MS): Promise<void> {
    this.#closing = true;
    this.#discipline.stop();
    if (this.#inflight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const budget = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, budgetMs);
      });
      await Promise.race([Promise.allSettled([...this.#inflight]), budget]);
      clearTimeout(timer);
    }
    if (this.#inflight.size > 0) {
      this.#logger.warn(
        { writes: this.#inflight.size },
        "control: writes still in flight at the end of the stop budget; their outcome is unknown",
      );
      this.#cut.abort(new Error("the service stopped"));
      await Promise.allSettled([...this.#inflight]);
    }
  }

  async execute(request: ControlRequest): Promise<ControlOutcome> {
    const { target } = request;
    // 1. the action for this kind of target
    const checked = checkAction(target, request.action);
    if ("status" in checked) return checked;
    const row = checked;
    const action = row.name as OutletControlAction;

    // 2. the instance, 3. control allowed, 4. polled at least once
    const polled = this.#polled(request.instanceId);
    if ("status" in polled) return polled;
    const { id, snapshot } = polled;

    // 5. the target in the latest snapshot
    const planned = plan(snapshot, target, id);
    if ("status" in planned) return planned;
    const { resolved, targets } = planned;
    const guarded = row.refusedWhenProtected
      ? protectedRefusal(snapshot, resolved, targets, action, id)
      : null;
    if (guarded !== null) return guarded;
    const client = this.#client(id);
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
    // One once-only id per outlet write of a reboot or resetStats, from the command's id.
    const commandId =
      request.commandId !== undefined && COMMAND_ID_PATTERN.test(request.commandId)
        ? request.commandId
        : randomBytes(12).toString("base64url");
    const onceId = (k: number): string | undefined => (row.idempotent ? undefined : `${commandId}-${k}`);
    const written = await mapBounded([...targets.entries()], GROUP_CONCURRENCY, ([k, t]) =>
      this.#writeOne(id, client, t, row, onceId(k)),
    );

    // 7. the outcome (an outcome-unknown write is polled soon too: the PDU's report tells)
    if (written.some((w) => w.ok || w.kind === "unknown") && !this.#stopping()) {
      this.#deps.pollSoon(id, REPOLL_DELAY_MS);
    }
    const outcome = conclude(id, resolved, row, written);
    this.#logger.debug(
      { instance: id, target: describeTarget(resolved), action, status: outcome.status },
      "control: done",
    );
    return outcome;
  }

  #stopping(): boolean {
    return this.#closing || this.#deps.signal?.aborted === true;
  }

  /** The instance's driver, while this process owns the instance; else undefined (503). */
  #client(id: string): ControlClient | undefined {
    return (this.#deps.ownership ?? OWN_ALL).owns(id) ? this.#deps.clients.get(id) : undefined;
  }

  /**
   * The instance and its latest snapshot, or why a write to it is refused: 404 unknown instance,
   * 409 ActionsEnabled: false, 503 not polled yet (Retry-After: its PollInterval).
   */
  #polled(requested: string): { readonly id: string; readonly snapshot: Snapshot } | Refusal {
    const instance = this.#instance(requested);
    if (instance === undefined) {
      const known = this.#deps.config.instances.map((i) => i.id);
      return refuse(
        404,
        "Unknown instance",
        `no PDU instance ${quote(requested)} is configured; configured instances: ${listSome(known)}`,
      );
    }
    const id = instance.id;
    const disabled = actionsDisabled(instance);
    if (disabled !== null) return disabled;
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
    return { id, snapshot };
  }

  /** Exact id, else the one configured id equal ignoring case (the loader forbids two such ids). */
  #instance(requested: string): InstanceConfig | undefined {
    const instances = this.#deps.config.instances;
    const lower = requested.toLowerCase();
    return instances.find((i) => i.id === requested) ?? instances.find((i) => i.id.toLowerCase() === lower);
  }

  /**
   * One outlet's write in that outlet's turn (./discipline.ts). The latch (or its removal, after a
   * failed on/off) happens within the turn too, so the store ends with the state of the last
   * command written.
   */
  async #writeOne(
    instanceId: string,
    client: ControlClient,
    planned: PlannedOutlet,
    row: CommandRow,
    onceId: string | undefined,
  ): Promise<Written> {
    const action = row.name as OutletControlAction;
    const target: OutletTarget = { deviceId: planned.deviceId, index: planned.index, route: planned.route };
    const key = outletKey(instanceId, target.deviceId, target.index);
    const turn = await this.#discipline.acquire(key, action, planned.rebootDelay);
    if (!turn.ok) return { target, ok: false, ...notSent(turn) };
    let result: Written | undefined;
    try {
      const writing = this.#write(instanceId, client, target, row, onceId);
      this.#inflight.add(writing);
      try {
        result = await writing;
      } finally {
        this.#inflight.delete(writing);
      }
      if (row.latches !== null) {
        if (result.ok) this.#deps.store.latch(instanceId, target.deviceId, target.index, row.latches);
        // The write may or may not have happened: show what the PDU reports, not an older command.
        else if (result.kind !== "stopped")
          this.#deps.store.unlatch(instanceId, target.deviceId, target.index);
      }
      return result;
    } finally {
      // A reboot that may have reached the PDU holds further reboots off for its delay.
      turn.release(
        result === undefined || result.ok || result.kind === "unknown" || result.kind === "timeout",
      );
    }
  }

  async #write(
    instanceId: string,
    client: ControlClient,
    target: OutletTarget,
    row: CommandRow,
    onceId: string | undefined,
  ): Promise<Written> {
    const action = row.name;
    if (this.#stopping())
      return { target, ok: false, kind: "stopped", error: "the service is stopping; not sent" };
    const result = await this.#fenced(instanceId, onceId, (signal) => row.call(client, target, signal));
    if (!result.ok) {
      this.#logger.debug(
        { outlet: outletName(target), action, error: result.error },
        "control: write failed",
      );
    }
    return { target, ...result };
  }

  /**
   * One driver call behind the fence (among several replicas): the grant first (a conditional
   * renewal of the instance's lease, recording the once-only id), its start check right before the
   * call, the call aborted by a stop or by the grant's end. Never rejects.
   */
  async #fenced(
    instanceId: string,
    onceId: string | undefined,
    send: (signal: AbortSignal) => Promise<void>,
  ): Promise<
    { readonly ok: true } | { readonly ok: false; readonly kind: FailureKind; readonly error: string }
  > {
    const fence = this.#deps.fence;
    let grant: WriteGrant | null = null;
    if (fence !== undefined) {
      try {
        grant = await fence.beforeWrite(instanceId, onceId === undefined ? {} : { onceId });
      } catch (e) {
        return { ok: false, ...fenceRefusal(e) };
      }
    }
    let signal = this.#cut.signal;
    try {
      if (grant !== null) {
        grant.assertMayStart();
        signal = AbortSignal.any([this.#cut.signal, grant.signal]);
      }
      await send(signal);
      return { ok: true };
    } catch (e) {
      if (e instanceof FencingError) return { ok: false, ...fenceRefusal(e) };
      return { ok: false, ...failureOf(e, signal) };
    } finally {
      grant?.done();
    }
  }

  /**
   * A settings write (contract §10): the same checks as a command (instance, ActionsEnabled, polled,
   * target in the latest snapshot), the values checked by the settings table (./settings.ts), the
   * write in the target's turn (an outlet's turn is the one its commands take), then an early poll,
   * which shows the new values: the PDU reports settings at once, unlike a switched state.
   */
  async applySettings(request: SettingsRequest): Promise<SettingsOutcome> {
    const { target } = request;
    const allowed = target.kind === "outlet" ? SETTING_NAMES : (["label"] as const);
    const problem = settingsProblem(request.settings, allowed);
    if (problem !== null) return refuse(400, "Bad settings", `${problem}; nothing was sent`);
    const index = badIndex(target);
    if (index !== null) return index;
    const settings = request.settings as OutletSettings;

    const polled = this.#polled(request.instanceId);
    if ("status" in polled) return polled;
    const { id, snapshot } = polled;
    const planned = planSettings(snapshot, target, id);
    if ("status" in planned) return planned;
    if (planned.kind === "outlet") {
      const guarded = protectedSettingsRefusal(snapshot, planned.outlet, settings, id);
      if (guarded !== null) return guarded;
    }
    const client = this.#client(id);
    if (client === undefined) {
      const detail = `control of instance ${id} is not available in this process`;
      return refuse(503, "Control unavailable", detail, { retryAfter: STOPPING_RETRY_AFTER });
    }
    const call =
      planned.kind === "outlet"
        ? client.setOutletSettings?.bind(client, planned.outlet, settings)
        : client.setLabel?.bind(client, planned.label, settings.label ?? "");
    if (call === undefined) {
      return refuse(
        502,
        "Not supported",
        `the driver of instance ${id} cannot change settings of ${describeTarget(planned.resolved)}; nothing was sent`,
      );
    }
    const what = `${SETTINGS_ACTION} ${Object.keys(settings).join(", ")} on ${describeTarget(planned.resolved)} of instance ${id}`;
    if (this.#stopping()) {
      return refuse(
        503,
        "Service stopping",
        `the service is stopping: ${what} was not sent; try again once it is back`,
        {
          retryAfter: STOPPING_RETRY_AFTER,
        },
      );
    }

    this.#logger.debug(
      { instance: id, target: describeTarget(planned.resolved) },
      "control: writing settings",
    );
    const result = await this.#inTurn(id, planned.key, SETTINGS_ACTION, (signal) => call(signal));
    if (result.ok || result.kind === "unknown") {
      if (!this.#stopping()) this.#deps.pollSoon(id, REPOLL_DELAY_MS);
    }
    if (result.ok) return { ok: true, status: 200, instanceId: id, target: planned.resolved, settings };
    return settingsFailure(what, result);
  }

  /** One write in the turn of `key` (./discipline.ts), tracked as in flight; never rejects. */
  async #inTurn(
    instanceId: string,
    key: string,
    action: DisciplineAction,
    send: (signal: AbortSignal) => Promise<void>,
  ): Promise<
    { readonly ok: true } | { readonly ok: false; readonly kind: FailureKind; readonly error: string }
  > {
    const turn = await this.#discipline.acquire(key, action, null);
    if (!turn.ok) return { ok: false, ...notSent(turn) };
    try {
      if (this.#stopping()) return { ok: false, kind: "stopped", error: "the service is stopping; not sent" };
      const writing = this.#fenced(instanceId, undefined, send).then((result) => {
        if (!result.ok) this.#logger.debug({ key, action, error: result.error }, "control: write failed");
        return result;
      });
      this.#inflight.add(writing);
      try {
        return await writing;
      } finally {
        this.#inflight.delete(writing);
      }
    } finally {
      turn.release(false);
    }
  }
}

/** Why a write was not sent: the per-outlet discipline's refusal (./discipline.ts) as a failure. */
function notSent(refused: Refused): { kind: FailureKind; error: string } {
  switch (refused.kind) {
    case "superseded":
      return { kind: "superseded", error: "superseded by a later on/off for the same outlet; not sent" };
    case "expired":
      return {
        kind: "expired",
        error: `waited ${Math.round(refused.waitedMs / 1000)} s behind other commands for the same outlet; dropped, not sent`,
      };
    case "busy":
      return { kind: "busy", error: `${refused.reason}; not sent` };
    case "stopped":
      return { kind: "stopped", error: "the service is stopping; not sent" };
  }
}

/**
 * Why the fence refused a write: nothing was sent by this attempt (`fenced`: this replica does not
 * hold the instance now, could not renew its lease, or the write could not start in time), except
 * that a once-only id used before means the command may have run already (`unknown`).
 */
function fenceRefusal(e: unknown): { kind: FailureKind; error: string } {
  if (e instanceof FencingError && e.reason === "once-used") {
    return {
      kind: "unknown",
      error: "this command was carried out or attempted before (its once-only id is recorded)",
    };
  }
  if (e instanceof FencingError && e.reason === "stopping") {
    return { kind: "stopped", error: "the service is stopping; not sent" };
  }
  return {
    kind: "fenced",
    error: `this replica may not write to the PDU now (${describeError(e)}); not sent`,
  };
}

/** How a write that threw failed: cut by a stop (outcome unknown), timed out, unknown, or failed. */
function failureOf(e: unknown, signal: AbortSignal): { kind: FailureKind; error: string } {
  if (signal.aborted)
    return { kind: "unknown", error: "the service stopped while the write was in progress" };
  const kind: FailureKind = !isPduError(e)
    ? "failed"
    : e.kind === "timeout"
      ? "timeout"
      : e.kind === "outcome-unknown"
        ? "unknown"
        : e.kind === "refused"
          ? "refused"
          : "failed";
  return { kind, error: describeError(e) };
}

/** A settings write's target as found in the latest snapshot, with its turn's key. */
type SettingsPlan = { readonly resolved: SettingsTarget; readonly key: string } & (
  | { readonly kind: "outlet"; readonly outlet: OutletTarget }
  | { readonly kind: "label"; readonly label: LabelTarget }
);

/** The settings write's target in the latest snapshot, or a 400 (unsafe name) or 404. */
function planSettings(snapshot: Snapshot, target: SettingsTarget, id: string): SettingsPlan | Refusal {
  if (target.kind === "group") {
    const problem = nameProblem(target.groupKey);
    if (problem !== null) return unsafeName("group key", target.groupKey, problem, id);
    const group = findGroup(snapshot, target.groupKey);
    if (group === undefined) return unknownGroup(snapshot, target.groupKey, id);
    return {
      kind: "label",
      resolved: { kind: "group", groupKey: group.key },
      key: `${id}\u0000group\u0000${group.key.toLowerCase()}`,
      label: { kind: "group", groupKey: group.key },
    };
  }
  const problem = nameProblem(target.deviceId);
  if (problem !== null) return unsafeName("device id", target.deviceId, problem, id);
  const device = findDevice(snapshot, target.deviceId);
  if (device === undefined) return unknownDevice(snapshot, target.deviceId, id);
  const route = device.route;
  switch (target.kind) {
    case "device":
      return {
        kind: "label",
        resolved: target,
        key: `${id}\u0000device\u0000${device.id}`,
        label: { kind: "device", deviceId: device.id, route },
      };
    case "entity": {
      const keyProblem = nameProblem(target.entityKey);
      if (keyProblem !== null) return unsafeName("entity key", target.entityKey, keyProblem, id);
      const entity = device.entities.find((e) => e.key === target.entityKey);
      if (entity === undefined) {
        return refuse(
          404,
          "Unknown entity",
          `device ${device.id} of instance ${id} has no entity ${quote(target.entityKey)}; its entities: ${listSome(device.entities.map((e) => e.key))}`,
        );
      }
      return {
        kind: "label",
        resolved: target,
        key: `${id}\u0000entity\u0000${device.id}\u0000${entity.key}`,
        label: { kind: "entity", deviceId: device.id, entityKey: entity.key, route },
      };
    }
    case "outlet": {
      if (!device.outlets.some((o) => o.index === target.index)) {
        return refuse(
          404,
          "Unknown outlet",
          `device ${device.id} of instance ${id} has no outlet ${target.index} (indexes are 0-based)`,
        );
      }
      return {
        kind: "outlet",
        resolved: target,
        // The key of the outlet's commands: settings and switching of one outlet take turns.
        key: outletKey(id, device.id, target.index),
        outlet: { deviceId: device.id, index: target.index, route },
      };
    }
  }
}

function settingsFailure(
  what: string,
  failed: { readonly kind: FailureKind; readonly error: string },
): Refusal {
  const why = `${what}: ${failed.error}`;
  switch (failed.kind) {
    case "unknown":
      return refuse(
        502,
        "Outcome unknown",
        `${why}; it may or may not have been carried out: check before retrying`,
        {
          problem: "outcome-unknown",
        },
      );
    case "stopped":
      return refuse(503, "Service stopping", why, { retryAfter: STOPPING_RETRY_AFTER });
    case "fenced":
      return refuse(503, "Not held here", `${why}; try again shortly`, {
        retryAfter: NOT_HELD_RETRY_AFTER,
        problem: "not-held",
      });
    case "expired":
      return refuse(503, "Expired", `${why}; send it again if it is still wanted`, {
        retryAfter: 1,
        problem: "expired",
      });
    case "busy":
      return refuse(409, "Busy", why, { problem: "outlet-busy" });
    case "superseded":
      return refuse(409, "Superseded", why, { problem: "superseded" });
    case "refused":
      return refuse(409, "Refused by the PDU", why);
    case "timeout":
      return refuse(
        504,
        "PDU did not answer in time",
        `${why}; it may or may not have acted, check and try again`,
      );
    case "failed":
      return refuse(502, "PDU refused or failed", why);
  }
}

export function createControlService(deps: ControlDeps): ControlCore {
  return new ControlCore(deps);
}

/**
 * 409 when the instance has `ActionsEnabled: false`, else null: the one place that rule is decided
 * (the MQTT surface asks it too, so a refused command never reaches a control service).
 */
export function actionsDisabled(instance: Pick<InstanceConfig, "id" | "ActionsEnabled">): Refusal | null {
  if (instance.ActionsEnabled) return null;
  const id = instance.id;
  return refuse(
    409,
    "Control disabled",
    `control of instance ${id} is disabled: set Pdus.${id}.ActionsEnabled: true (with the PDU's Credentials) to allow it`,
  );
}

/** The command's row when it is allowed on the target (and the outlet index is sound), else a 400. */
function checkAction(target: ControlTarget, action: string): CommandRow | Refusal {
  const allowed = commandsFor(target.kind).map((c) => c.name);
  const row = command(action);
  if (row === undefined || !allowed.includes(action)) {
    const note =
      target.kind === "group" && row !== undefined && row.outlet !== null
        ? ` (${action} is outlet-only)`
        : "";
    return refuse(
      400,
      "Action not allowed",
      `action ${quote(action)} is not allowed for ${target.kind === "outlet" ? "an outlet" : "a group"}: use one of ${allowed.join(", ")}${note}`,
    );
  }
  return badIndex(target) ?? row;
}

/** 400 when an outlet target's index is not a 0-based integer, else null. */
function badIndex(target: SettingsTarget): Refusal | null {
  if (target.kind !== "outlet" || (Number.isSafeInteger(target.index) && target.index >= 0)) return null;
  return refuse(
    400,
    "Bad outlet index",
    `outlet index must be a 0-based integer, got ${String(target.index)}`,
  );
}

/** What to write. `resolved` spells the target as the PDU does (a group key's case). */
interface Plan {
  readonly resolved: ControlTarget;
  /** Each outlet with its device's route (so a OneView member's outlet goes through its proxy port). */
  readonly targets: readonly PlannedOutlet[];
}

const unsafeName = (what: string, name: string, problem: string, id: string): Refusal =>
  refuse(
    400,
    "Unsafe name",
    `${what} ${quote(name)} of instance ${id} ${problem}: names a PDU supplies are controlled only when they are safe (contract §7), nothing was sent`,
    { problem: "unsafe-name" },
  );

const unknownDevice = (snapshot: Snapshot, deviceId: string, id: string): Refusal =>
  refuse(
    404,
    "Unknown device",
    `device ${quote(deviceId)} is not in the latest snapshot of instance ${id}; its devices: ${listSome(snapshot.devices.map((d) => d.id))}`,
  );

function unknownGroup(snapshot: Snapshot, groupKey: string, id: string): Refusal {
  const groups = snapshot.groups.map((g) => g.key);
  const known =
    groups.length === 0
      ? "it has no groups (groups exist only on a OneView cluster master)"
      : `its groups: ${listSome(groups)}`;
  return refuse(
    404,
    "Unknown group",
    `group ${quote(groupKey)} is not in the latest snapshot of instance ${id}; ${known}`,
  );
}

/** The outlets to write, or a 404 naming what is missing from the latest snapshot. */
function plan(snapshot: Snapshot, target: ControlTarget, id: string): Plan | Refusal {
  if (target.kind === "outlet") {
    const problem = nameProblem(target.deviceId);
    if (problem !== null) return unsafeName("device id", target.deviceId, problem, id);
    const device = findDevice(snapshot, target.deviceId);
    if (device === undefined) return unknownDevice(snapshot, target.deviceId, id);
    const found = device.outlets.find((o) => o.index === target.index);
    if (found === undefined) {
      const indexes = device.outlets.map((o) => o.index);
      const range = indexes.length === 0 ? "none" : `${indexes[0]}-${indexes[indexes.length - 1]}`;
      return refuse(
        404,
        "Unknown outlet",
        `device ${device.id} of instance ${id} has no outlet ${target.index} (indexes are 0-based; its outlets: ${range})`,
      );
    }
    if (!device.outletControlEnabled) return controlDisabledOnPdu([device.id], id);
    return {
      resolved: target,
      targets: [
        { deviceId: device.id, index: target.index, route: device.route, rebootDelay: found.rebootDelay },
      ],
    };
  }
  const keyProblem = nameProblem(target.groupKey);
  if (keyProblem !== null) return unsafeName("group key", target.groupKey, keyProblem, id);
  const group = findGroup(snapshot, target.groupKey);
  if (group === undefined) return unknownGroup(snapshot, target.groupKey, id);
  if (group.members.length === 0) {
    return refuse(
      404,
      "Empty group",
      `group ${group.key} of instance ${id} has no member outlets, so there is nothing to switch; assign outlets to it on the PDU`,
    );
  }
  if (nameProblem(group.key) !== null) {
    return unsafeName("group key", group.key, nameProblem(group.key) ?? "", id);
  }
  const targets: PlannedOutlet[] = [];
  for (const member of group.members) {
    const memberProblem = nameProblem(member.deviceId);
    if (memberProblem !== null) {
      return refuse(
        404,
        "Unknown outlet",
        `group ${group.key} of instance ${id} names an outlet of device ${quote(member.deviceId)}, whose id ${memberProblem}, so it cannot be controlled; nothing was sent`,
      );
    }
    const device = findDevice(snapshot, member.deviceId);
    const found = device?.outlets.find((o) => o.index === member.index);
    if (device === undefined || found === undefined) {
      return refuse(
        404,
        "Unknown outlet",
        `group ${group.key} of instance ${id} names outlet ${outletName(member)}, which is not in the latest snapshot; nothing was sent`,
      );
    }
    targets.push({
      deviceId: device.id,
      index: member.index,
      route: device.route,
      rebootDelay: found.rebootDelay,
    });
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

/**
 * 409 when the command may not touch a protected outlet or group (`Protected: true` in the
 * instance's overrides, read from the snapshot the overrides seam made): a group action is refused
 * whole, naming every protected member. Null when nothing protected is involved.
 */
function protectedRefusal(
  snapshot: Snapshot,
  resolved: ControlTarget,
  targets: readonly PlannedOutlet[],
  action: string,
  id: string,
): Refusal | null {
  const shielded = targets.filter((t) => findOutlet(snapshot, t.deviceId, t.index)?.protected === true);
  const names = shielded.map(outletName);
  const fix = `remove Protected from Pdus.${id}.Overrides to allow it; nothing was sent`;
  if (resolved.kind === "group") {
    const groupProtected = findGroup(snapshot, resolved.groupKey)?.protected === true;
    if (!groupProtected && names.length === 0) return null;
    const why = [
      ...(groupProtected ? [`group ${resolved.groupKey} is protected`] : []),
      ...(names.length > 0 ? [`it includes protected outlets ${listSome(names, 64)}`] : []),
    ].join(" and ");
    return refuse(
      409,
      "Protected",
      `${action} on group ${resolved.groupKey} of instance ${id} was refused for every outlet: ${why}; ${fix}`,
      { problem: "protected" },
    );
  }
  if (names.length === 0) return null;
  return refuse(
    409,
    "Protected",
    `${action} on outlet ${names[0]} of instance ${id} was refused: the outlet is protected; ${fix}`,
    { problem: "protected" },
  );
}

/**
 * 409 when a settings write would let a `Protected` outlet stay off (the settings table's
 * `whenProtected`: a power-on action of off, an on or reboot delay): the whole write, nothing sent.
 */
function protectedSettingsRefusal(
  snapshot: Snapshot,
  outlet: OutletTarget,
  settings: OutletSettings,
  id: string,
): Refusal | null {
  if (findOutlet(snapshot, outlet.deviceId, outlet.index)?.protected !== true) return null;
  const problem = protectedSettingsProblem(settings);
  if (problem === null) return null;
  return refuse(
    409,
    "Protected",
    `${SETTINGS_ACTION} ${Object.keys(settings).join(", ")} on outlet ${outletName(outlet)} of instance ${id} was refused: ` +
      `the outlet is protected, which refuses ${problem}; a protected outlet takes a label, offDelay and poaAction on or last; ` +
      `remove Protected from Pdus.${id}.Overrides to allow it; nothing was sent`,
    { problem: "protected" },
  );
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
  row: CommandRow,
  written: readonly Written[],
): ControlOutcome {
  const action = row.name;
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

  const repeatable = row.idempotent;
  if (failed.some((f) => f.kind === "unknown")) {
    return refuse(
      502,
      "Outcome unknown",
      `${what}: ${why}; the outcome is not known: it may or may not have been carried out, and it was not sent again. Check the outlet before retrying`,
      { ...extra, problem: "outcome-unknown" },
    );
  }
  if (failed.some((f) => f.kind === "fenced")) {
    return refuse(503, "Not held here", `${what} was not completed: ${why}; try again shortly`, {
      ...extra,
      retryAfter: NOT_HELD_RETRY_AFTER,
      problem: "not-held",
    });
  }
  if (failed.some((f) => f.kind === "stopped")) {
    return refuse(503, "Service stopping", `the service is stopping, ${what} was not completed: ${why}`, {
      ...extra,
      retryAfter: STOPPING_RETRY_AFTER,
    });
  }
  // Refused by the per-outlet discipline, nothing sent: the first such kind when nothing else failed.
  const refusal =
    failed.every((f) => f.kind === failed[0]?.kind) && succeeded.length === 0 ? failed[0]?.kind : null;
  if (refusal === "superseded") {
    return refuse(409, "Superseded", `${what} was not sent: ${why}`, { ...extra, problem: "superseded" });
  }
  if (refusal === "busy") {
    return refuse(409, "Outlet busy", `${what} was refused: ${why}`, { ...extra, problem: "outlet-busy" });
  }
  if (refusal === "expired") {
    return refuse(503, "Expired", `${what} was dropped: ${why}; send it again if it is still wanted`, {
      ...extra,
      retryAfter: 1,
      problem: "expired",
    });
  }
  if (refusal === "refused") {
    return refuse(409, "Refused by the PDU", `${what} was refused: ${why}`, extra);
  }
  if (succeeded.length === 0 && failed.every((f) => f.kind === "timeout")) {
    return refuse(
      504,
      "PDU did not answer in time",
      repeatable
        ? `${what}: the PDU did not answer in time (${why}); it may or may not have acted, check the state and try again`
        : `${what}: the PDU did not answer in time (${why}); it may or may not have acted and it was not sent again: check the outlet before retrying`,
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
