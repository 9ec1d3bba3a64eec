/**
 * Asset control (docs/assets.md "Asset control"): `on`, `off` and `reboot` of an asset,
 * cord by cord through the same control path as an outlet command. Each cord's write is a request to
 * the control service the composition root hands in (the core in one process; among several
 * replicas the forwarding, which hands a cord to the replica holding its instance), so every cord
 * gets the core's checks, its instance's ActionsEnabled, the outlet's turns and relay protection,
 * the fencing and the protected-asset rule; each write carries a once-only id (`once`), so a cord
 * is never written twice, and names the asset in its audit line.
 *
 * Before anything is sent the whole command is checked (and refused, nothing sent): the action, the
 * asset, every cord's instance configured with ActionsEnabled, every cord resolved to a device, the
 * protected-asset rule for an `off` (src/assets/protect.ts), `"confirm": true` for the reboot of a
 * protected asset, and one command per asset at a time in this process.
 *
 * `on` and `off` write every cord at once. `reboot` writes every cord off at once, waits the
 * longest of the cords' reboot delays, their instances' RelayProtection and 5 s, then writes on to
 * every cord whose off was not refused. The answer lists each cord's writes; the asset's outcome is
 * `executed` (every cord done), `refused` (nothing sent) or `partial` (the cords that failed and why).
 */
import { randomBytes } from "node:crypto";
import { protectedConflicts, protectedDetail } from "../assets/protect.js";
import { outletAt } from "../assets/state.js";
import type { AssetDef } from "../assets/types.js";
import type { Config } from "../config/schema.js";
import { describeError } from "../pdu/errors.js";
import { findDevice } from "../pdu/model.js";
import type { AssetBookSource, AssetBookView } from "./asset-guard.js";
import { auditControl, type AuditSink } from "./audit.js";
import { actionsDisabled } from "./checks.js";
import { listSome, quote, STOPPING_RETRY_AFTER } from "./outcomes.js";
import type {
  ControlOutcome,
  ControlProblem,
  ControlRequest,
  ControlService,
  ControlSource,
} from "./types.js";

export const ASSET_ACTIONS = ["on", "off", "reboot"] as const;
export type AssetAction = (typeof ASSET_ACTIONS)[number];
/** The least time a reboot keeps the cords off (s). */
export const ASSET_REBOOT_MIN_S = 5;

export interface AssetRequest {
  readonly assetId: string;
  readonly action: string;
  /** Needed (true) for the reboot of a protected asset. */
  readonly confirm?: boolean;
  readonly source: ControlSource;
  /** The command's id, from which each cord's once-only id is made; made when absent. */
  readonly commandId?: string;
}

/** One cord a command writes: the outlet it resolved to. */
export interface PlannedCord {
  /** The cord's position in the asset's `Cords` (0-based). */
  readonly cord: number;
  readonly instanceId: string;
  readonly deviceId: string;
  readonly index: number;
}

/** How one write (or a cord's writes) ended: `refused` nothing was sent; `unknown` it may have acted. */
export type CordResult = "done" | "refused" | "failed" | "unknown";

export interface CordWrite {
  readonly action: "on" | "off";
  readonly result: CordResult;
  /** The status the outlet command would have answered. */
  readonly status: number;
  readonly detail?: string;
  readonly problem?: string;
}

export interface CordOutcome extends PlannedCord {
  readonly result: CordResult;
  /** In order: one for on and off, the off and the on of a reboot (the on left out when the off was refused). */
  readonly writes: readonly CordWrite[];
}

export type AssetResult = "executed" | "partial" | "refused";

export interface AssetOutcome {
  readonly ok: boolean;
  readonly asset: string;
  readonly action: string;
  readonly outcome: AssetResult;
  /** 200 executed; 502 partial; a refusal's own status (400, 404, 409, 503). */
  readonly status: 200 | 400 | 404 | 409 | 502 | 503 | 504;
  readonly title: string;
  readonly detail: string;
  readonly problem?: ControlProblem;
  readonly retryAfter?: number;
  /** Each cord's writes (empty when the command was refused before any cord's write). */
  readonly cords: readonly CordOutcome[];
}

/** An asset's command checked: the cords it writes. */
export interface AssetPlan {
  readonly asset: AssetDef;
  readonly action: AssetAction;
  readonly cords: readonly PlannedCord[];
  /** A reboot's time between the offs and the ons (ms), and the part of it a stop never cuts. */
  readonly waitMs: number;
  readonly minWaitMs: number;
}

export interface AssetControlDeps {
  /** Read on every request (live configuration changes). */
  readonly config: () => Config;
  readonly book: AssetBookSource;
  /** Where each cord's write goes: the control core, or among replicas the forwarding to the holder. */
  readonly cords: ControlService;
  /** Where the cords' audit lines go (those carried out by another replica are audited there). */
  readonly audit: AuditSink;
  /** Waits `ms`, ending early when `signal` aborts (tests shorten it). */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Waits `ms`, ending early (resolved, not rejected) when `signal` aborts. */
export const sleepFor = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/** A refusal of a whole command: nothing was sent. */
export function assetRefusal(
  asset: string,
  action: string,
  status: AssetOutcome["status"],
  title: string,
  detail: string,
  extra: { problem?: ControlProblem; retryAfter?: number } = {},
): AssetOutcome {
  return { ok: false, asset, action, outcome: "refused", status, title, detail, ...extra, cords: [] };
}

const cordName = (c: { cord: number; instanceId: string; deviceId: string | null; index: number }): string =>
  `cord ${c.cord + 1} (${c.instanceId}${c.deviceId === null ? "" : `/${c.deviceId}`} outlet ${c.index})`;

export class AssetControl {
  readonly #deps: AssetControlDeps;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Assets with a command running in this process. */
  readonly #running = new Set<string>();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Aborted by the stop: a reboot's wait ends early (its relay protection part aside). */
  readonly #cut = new AbortController();

  constructor(deps: AssetControlDeps) {
    this.#deps = deps;
    this.#sleep = deps.sleep ?? sleepFor;
  }

  get stopping(): boolean {
    return this.#cut.signal.aborted;
  }

  /** The assets' book now (null: no assets). */
  book(): AssetBookView | null {
    return this.#deps.book();
  }

  /** An asset's command, checked whole and then written cord by cord; never rejects. */
  async execute(request: AssetRequest): Promise<AssetOutcome> {
    const planned = this.plan(request.assetId, request.action, request.confirm === true);
    if ("outcome" in planned) {
      this.auditRefusal(planned, request.source);
      return planned;
    }
    const id = planned.asset.id;
    if (this.stopping) return this.#refuseStopping(planned, request.source);
    if (this.#running.has(id)) {
      const busy = assetRefusal(
        id,
        planned.action,
        409,
        "Asset busy",
        `asset ${id} has a command running; ${planned.action} was not sent: try again once it is done`,
        { problem: "asset-busy" },
      );
      this.auditRefusal(busy, request.source);
      return busy;
    }
    this.#running.add(id);
    const running = this.#run(planned, request.source, request.commandId ?? newCommandId());
    this.#inFlight.add(running);
    try {
      const outcome = await running;
      this.#auditAsset(outcome, request.source);
      return outcome;
    } finally {
      this.#inFlight.delete(running);
      this.#running.delete(id);
    }
  }

  /** Refuses new commands, ends reboots' waits early and waits for the commands in flight. */
  async stop(): Promise<void> {
    this.#cut.abort();
    await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * The checks of a command before anything is sent (see the file's comment): the plan, or the
   * refusal (not audited: the caller audits it with its source).
   */
  plan(assetId: string, action: string, confirm: boolean): AssetPlan | AssetOutcome {
    if (!(ASSET_ACTIONS as readonly string[]).includes(action))
      return assetRefusal(
        assetId,
        action,
        400,
        "Action not allowed",
        `action ${quote(action)} is not allowed for an asset: use one of ${ASSET_ACTIONS.join(", ")}`,
      );
    const book = this.#deps.book();
    const asset = book?.model.assets.get(assetId);
    if (book === null || asset === undefined) {
      const known = book === null ? [] : [...book.model.assets.keys()];
      return assetRefusal(
        assetId,
        action,
        404,
        "Unknown asset",
        `no asset ${quote(assetId)} is configured; configured assets: ${listSome(known)}`,
      );
    }
    const cords = this.#cordsOf(book, asset, action);
    if (!Array.isArray(cords)) return cords;
    const guarded = guardProtected(book, asset, action as AssetAction, cords, confirm);
    if (guarded !== null) return guarded;
    const { waitMs, minWaitMs } = rebootWait(this.#deps.config(), book, cords);
    return { asset, action: action as AssetAction, cords, waitMs, minWaitMs };
  }

  /** Every cord's instance configured with ActionsEnabled, and its device known; else the refusal. */
  #cordsOf(book: AssetBookView, asset: AssetDef, action: string): PlannedCord[] | AssetOutcome {
    const config = this.#deps.config();
    const state = book.get(asset.id);
    const cords: PlannedCord[] = [];
    for (const [i, cord] of asset.cords.entries()) {
      const instance = config.instances.find((c) => c.id === cord.instance);
      const reading = state?.readings[i];
      const deviceId = cord.device ?? (reading?.resolved === true ? reading.deviceId : null);
      const where = { cord: i, instanceId: cord.instance, deviceId, index: cord.outlet };
      const refused = (status: AssetOutcome["status"], title: string, why: string, retryAfter?: number) =>
        assetRefusal(
          asset.id,
          action,
          status,
          title,
          `${action} on asset ${asset.id} was refused for every cord: ${cordName(where)} ${why}; nothing was sent`,
          retryAfter === undefined ? {} : { retryAfter },
        );
      if (instance === undefined) return refused(404, "Unknown instance", "is on an instance not configured");
      const disabled = actionsDisabled(instance);
      if (disabled !== null)
        return refused(409, "Control disabled", `is on instance ${instance.id}: ${disabled.detail}`);
      if (deviceId === null)
        return refused(
          503,
          "Cord not resolved",
          `is not resolved to an outlet yet (${reading?.detail ?? "not polled"})`,
          Math.max(1, Math.ceil(instance.PollInterval)),
        );
      cords.push({ cord: i, instanceId: instance.id, deviceId, index: cord.outlet });
    }
    return cords;
  }

  /**
   * One cord's write through the control path (once-only id `<commandId>-0` among replicas, the
   * asset named), audited here unless another replica carried it out (that replica audits it).
   */
  async writeCord(
    plan: Pick<AssetPlan, "asset">,
    cord: PlannedCord,
    action: "on" | "off",
    options: { readonly source: ControlSource; readonly commandId: string; readonly cycle?: boolean },
  ): Promise<CordWrite> {
    const target = { kind: "outlet", deviceId: cord.deviceId, index: cord.index } as const;
    const request: ControlRequest = {
      instanceId: cord.instanceId,
      target,
      action,
      source: options.source,
      commandId: options.commandId,
      once: true,
      asset: plan.asset.id,
      ...(options.cycle === true ? { assetCycle: true } : {}),
    };
    let outcome: ControlOutcome & { readonly carriedOutBy?: string };
    try {
      outcome = await this.#deps.cords.execute(request);
    } catch (error) {
      const detail = `${action} on ${cordName(cord)} failed: ${describeError(error)}; the outcome is not known`;
      outcome = { ok: false, status: 502, title: "Outcome unknown", detail, problem: "outcome-unknown" };
    }
    if (outcome.carriedOutBy === undefined) {
      auditControl(this.#deps.audit, {
        source: options.source,
        instanceId: cord.instanceId,
        target,
        action,
        status: outcome.status,
        ...(outcome.ok ? {} : { detail: outcome.detail }),
        ...(outcome.ok || outcome.problem === undefined ? {} : { problem: outcome.problem }),
        asset: plan.asset.id,
        fromCore: true,
      });
    }
    return cordWrite(action, outcome);
  }

  async #run(plan: AssetPlan, source: ControlSource, commandId: string): Promise<AssetOutcome> {
    const write = (action: "on" | "off", cords: readonly PlannedCord[], cycle: boolean) =>
      Promise.all(
        cords.map((c) =>
          this.writeCord(plan, c, action, { source, commandId: `${commandId}${action}${c.cord}`, cycle }),
        ),
      );
    if (plan.action !== "reboot") {
      const writes = await write(plan.action, plan.cords, false);
      return assetOutcome(
        plan,
        plan.cords.map((c, i) => cordOutcome(c, [writes[i]!])),
      );
    }
    const offs = await write("off", plan.cords, true);
    const sent = plan.cords.filter((_, i) => offs[i]!.result !== "refused");
    if (sent.length > 0) {
      // The relay protection part is never cut: the ons would be refused before it.
      await this.#sleep(plan.minWaitMs);
      await this.#sleep(Math.max(0, plan.waitMs - plan.minWaitMs), this.#cut.signal);
    }
    const ons = await write("on", sent, false);
    const onOf = new Map(sent.map((c, i) => [c.cord, ons[i]!]));
    const cords = plan.cords.map((c, i) => {
      const on = onOf.get(c.cord);
      return cordOutcome(c, on === undefined ? [offs[i]!] : [offs[i]!, on]);
    });
    return assetOutcome(plan, cords);
  }

  #refuseStopping(plan: AssetPlan, source: ControlSource): AssetOutcome {
    const refused = assetRefusal(
      plan.asset.id,
      plan.action,
      503,
      "Service stopping",
      `the service is stopping: ${plan.action} on asset ${plan.asset.id} was not sent; try again once it is back`,
      { retryAfter: STOPPING_RETRY_AFTER },
    );
    this.auditRefusal(refused, source);
    return refused;
  }

  /** The audit of a command refused before any cord's write: one `control` event naming the asset. */
  auditRefusal(outcome: AssetOutcome, source: ControlSource): void {
    auditControl(this.#deps.audit, {
      source,
      instanceId: null,
      target: null,
      action: (ASSET_ACTIONS as readonly string[]).includes(outcome.action) ? outcome.action : null,
      status: outcome.status,
      detail: outcome.detail,
      ...(outcome.problem === undefined ? {} : { problem: outcome.problem }),
      asset: outcome.asset,
      fromCore: true,
    });
  }

  /** The asset's own line once its cords were written (each cord has its `control` line). */
  #auditAsset(outcome: AssetOutcome, source: ControlSource): void {
    const line = {
      audit: "asset",
      source: source.surface,
      client: source.surface === "mqtt" ? undefined : source.client,
      topic: source.surface === "mqtt" ? source.topic : undefined,
      user: source.surface === "console" ? source.user.sub : undefined,
      asset: outcome.asset,
      action: outcome.action,
      outcome: outcome.outcome,
      status: outcome.status,
      detail: outcome.ok ? undefined : outcome.detail,
    };
    this.#deps.audit.logger[outcome.ok ? "info" : "warn"](line, "asset control");
  }
}

/** A command id from which the cords' once-only ids are made. */
export const newCommandId = (): string => randomBytes(12).toString("base64url");

/**
 * 409 when an `off` would leave the (protected) asset with no live cord (every cord not known to be
 * off is cut), or a reboot of a protected asset is not confirmed.
 */
function guardProtected(
  book: AssetBookView,
  asset: AssetDef,
  action: AssetAction,
  cords: readonly PlannedCord[],
  confirm: boolean,
): AssetOutcome | null {
  if (!asset.protected) return null;
  if (action === "reboot") {
    if (confirm) return null;
    return assetRefusal(
      asset.id,
      action,
      409,
      "Confirmation required",
      `asset ${asset.id} is protected: its reboot cuts every cord for a while, so it needs "confirm": true; nothing was sent`,
      { problem: "confirm-required" },
    );
  }
  if (action !== "off") return null;
  const offs = cords.map((c) => ({ instance: c.instanceId, deviceId: c.deviceId, index: c.index }));
  const conflicts = protectedConflicts(book, offs);
  if (conflicts.length === 0) return null;
  return assetRefusal(
    asset.id,
    action,
    409,
    "Protected asset",
    protectedDetail(`off on asset ${asset.id}`, conflicts),
    {
      problem: "protected",
    },
  );
}

/** A reboot's wait: the longest of 5 s, the cords' reboot delays and their instances' RelayProtection. */
function rebootWait(
  config: Config,
  book: AssetBookView,
  cords: readonly PlannedCord[],
): { waitMs: number; minWaitMs: number } {
  let relay = 0;
  let delay = ASSET_REBOOT_MIN_S;
  for (const c of cords) {
    relay = Math.max(relay, config.instances.find((i) => i.id === c.instanceId)?.RelayProtection ?? 0);
    const snapshot = book.readings().get(c.instanceId)?.snapshot ?? null;
    const device = snapshot === null ? undefined : findDevice(snapshot, c.deviceId);
    const rebootDelay = device === undefined ? null : (outletAt(device, c.index)?.rebootDelay ?? null);
    if (rebootDelay !== null && Number.isFinite(rebootDelay)) delay = Math.max(delay, rebootDelay);
  }
  // A little past the relay protection, so the on is never refused by it.
  const minWaitMs = relay > 0 ? Math.ceil(relay * 1000) + 250 : 0;
  return { waitMs: Math.max(delay * 1000, minWaitMs), minWaitMs };
}

/** One write's outcome from the control service's. */
function cordWrite(action: "on" | "off", outcome: ControlOutcome): CordWrite {
  if (outcome.ok) return { action, result: "done", status: 200 };
  const result: CordResult =
    outcome.problem === "outcome-unknown" || outcome.status === 504
      ? "unknown"
      : outcome.status === 502
        ? "failed"
        : "refused";
  return {
    action,
    result,
    status: outcome.status,
    detail: outcome.detail,
    ...(outcome.problem === undefined ? {} : { problem: outcome.problem }),
  };
}

/** A cord's outcome over its writes: unknown when any is, done when all are, refused when none was sent. */
function cordOutcome(cord: PlannedCord, writes: readonly CordWrite[]): CordOutcome {
  const result: CordResult = writes.some((w) => w.result === "unknown")
    ? "unknown"
    : writes.every((w) => w.result === "done")
      ? "done"
      : writes.every((w) => w.result === "refused")
        ? "refused"
        : "failed";
  return { ...cord, result, writes };
}

/** What a cord's writes came to, for a detail: `cord 2 (rack-b1/A2 outlet 3): off unknown (why)`. */
function cordText(c: CordOutcome): string {
  const bad = c.writes.filter((w) => w.result !== "done");
  const why = bad.map((w) => `${w.action} ${w.result}${w.detail === undefined ? "" : ` (${w.detail})`}`);
  return `${cordName(c)}: ${why.join(", ")}`;
}

/** The asset's outcome from its cords' (see the file's comment). */
export function assetOutcome(
  plan: Pick<AssetPlan, "asset" | "action">,
  cords: readonly CordOutcome[],
): AssetOutcome {
  const id = plan.asset.id;
  const what = `${plan.action} on asset ${id}`;
  const base = { asset: id, action: plan.action, cords };
  if (cords.every((c) => c.result === "done"))
    return {
      ...base,
      ok: true,
      outcome: "executed",
      status: 200,
      title: "Executed",
      detail: `${what}: every cord done`,
    };
  if (cords.every((c) => c.result === "refused")) {
    const first = cords[0]?.writes[0];
    const status =
      first?.status === 400 || first?.status === 404 || first?.status === 503 ? first.status : 409;
    return {
      ...base,
      ok: false,
      outcome: "refused",
      status,
      title: "Refused",
      detail: `${what} was refused, nothing was sent: ${cords.map(cordText).join("; ")}`,
      ...(first?.problem === undefined ? {} : { problem: first.problem as ControlProblem }),
    };
  }
  const failed = cords.filter((c) => c.result !== "done");
  const done = cords.filter((c) => c.result === "done").map(cordName);
  const unknown = failed.filter((c) => c.result === "unknown").map(cordName);
  return {
    ...base,
    ok: false,
    outcome: "partial",
    status: 502,
    title: "Partial",
    detail:
      `${what} was carried out on ${done.length} of ${cords.length} cords: ${failed.map(cordText).join("; ")}` +
      (done.length > 0 ? `; done: ${done.join(", ")}` : "") +
      (unknown.length > 0
        ? `; the outcome of ${unknown.join(", ")} is not known: check before retrying`
        : ""),
    ...(unknown.length > 0 ? { problem: "outcome-unknown" as const } : {}),
  };
}
