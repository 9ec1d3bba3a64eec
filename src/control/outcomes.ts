/**
 * What the control core answers: refusals, how each outlet's write ended, and the outcome of a
 * command or a settings write made of them (the table in docs/control.md, "Outcomes").
 */
import { FencingError } from "../fencing.js";
import { describeError, isPduError } from "../pdu/errors.js";
import type { OutletTarget } from "../pdu/driver.js";
import { quoteName } from "../names.js";
import { describeTarget } from "./audit.js";
import type { CommandRow } from "./commands.js";
import type { Refused } from "./outlet-turns.js";
import type { ControlOutcome, ControlProblem, ControlTarget, OutletResult } from "./types.js";

/** Retry-After (s) of the 503 answered while the service stops. */
export const STOPPING_RETRY_AFTER = 5;
/** Retry-After (s) of a 503 `not-held`: the instance's lease changes hands within a round or so. */
export const NOT_HELD_RETRY_AFTER = 2;

export type Refusal = Extract<ControlOutcome, { ok: false }>;

export const refuse = (
  status: Refusal["status"],
  title: string,
  detail: string,
  extra: { retryAfter?: number; outlets?: readonly OutletResult[]; problem?: ControlProblem } = {},
): Refusal => ({ ok: false, status, title, detail, ...extra });

/** 503: the service is stopping and `what` was not sent. */
export const stoppingRefusal = (what: string): Refusal =>
  refuse(
    503,
    "Service stopping",
    `the service is stopping: ${what} was not sent; try again once it is back`,
    {
      retryAfter: STOPPING_RETRY_AFTER,
    },
  );

/** 503: no driver of the instance in this process. */
export const controlUnavailable = (id: string): Refusal =>
  refuse(503, "Control unavailable", `control of instance ${id} is not available in this process`, {
    retryAfter: STOPPING_RETRY_AFTER,
  });

export const quote = (s: string): string => quoteName(s);

/** At most `max` items, then how many more. */
export function listSome(items: readonly string[], max = 10): string {
  if (items.length === 0) return "none";
  const shown = items.slice(0, max).join(", ");
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}

export const outletName = (t: { deviceId: string; index: number }): string => `${t.deviceId}/${t.index}`;

/**
 * Why one write was not done: `timeout` no answer in time; `failed` the PDU refused or failed;
 * `unknown` it may or may not have been carried out (never re-sent); `refused` the PDU refused it and
 * nothing was done; `unsupported` the driver refused it before sending anything (the PDU's family or
 * model cannot carry it out); `stopped` not sent, the service is stopping; `superseded`, `busy`,
 * `expired`, `relay` not sent, refused in the outlet's turns (./outlet-turns.ts; `relay`: its relay
 * protection, with when it may run); `fenced` not sent,
 * this replica may not write to the instance now (the cluster's fencing refused the grant, or it
 * came too late).
 */
export type FailureKind =
  | "timeout"
  | "failed"
  | "unknown"
  | "refused"
  | "unsupported"
  | "stopped"
  | "superseded"
  | "busy"
  | "expired"
  | "relay"
  | "fenced";

export interface WriteFailure {
  readonly kind: FailureKind;
  readonly error: string;
  /** `relay`: when the outlet may switch again (epoch ms). */
  readonly retryAt?: number;
}

/** How one write ended. */
export type WriteResult = { readonly ok: true } | ({ readonly ok: false } & WriteFailure);

/** How one outlet's write ended. */
export type Written = { readonly target: OutletTarget } & WriteResult;

type FailedWrite = Extract<Written, { ok: false }>;

export const STOPPED: WriteFailure = { kind: "stopped", error: "the service is stopping; not sent" };

/** Why a write was not sent: the outlet's turns' refusal as a failure. */
export function notSent(refused: Refused): WriteFailure {
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
    case "relay":
      return { kind: "relay", error: relayReason(refused), retryAt: refused.at };
    case "stopped":
      return STOPPED;
  }
}

/** Why relay protection refused a switch, and when it may run. */
function relayReason(refused: Extract<Refused, { kind: "relay" }>): string {
  const interval = seconds(refused.intervalMs);
  return (
    `relay protection: this outlet switched ${seconds(refused.sinceMs)} s ago and switches at most once every ${interval} s ` +
    `(RelayProtection); it may switch again from ${new Date(refused.at).toISOString()} ` +
    `(in ${seconds(refused.intervalMs - refused.sinceMs)} s); not sent`
  );
}

const seconds = (ms: number): string => (Math.ceil(ms / 100) / 10).toString();

/** Seconds until `at` (epoch ms), at least 1: a Retry-After. */
export const retryAfterOf = (at: number | undefined): number =>
  Math.max(1, Math.ceil(((at ?? Date.now()) - Date.now()) / 1000));

/** The title of a write the bridge refused before sending anything (not the PDU's refusal). */
const UNSUPPORTED_TITLE = "Refused by the bridge, nothing sent";

/** How a write that threw failed: cut by a stop (outcome unknown), timed out, unknown, or failed. */
export function failureOf(e: unknown, signal: AbortSignal): WriteFailure {
  if (signal.aborted)
    return { kind: "unknown", error: "the service stopped while the write was in progress" };
  const kind: FailureKind = !isPduError(e)
    ? "failed"
    : e.kind === "timeout"
      ? "timeout"
      : e.kind === "outcome-unknown"
        ? "unknown"
        : e.kind === "refused"
          ? e.unsent
            ? "unsupported"
            : "refused"
          : "failed";
  return { kind, error: describeError(e) };
}

/**
 * Why the fence refused a write: nothing was sent by this attempt (`fenced`: this replica does not
 * hold the instance now, could not renew its lease, or the write could not start in time), except
 * that a once-only id used before means the command may have run already (`unknown`).
 */
export function fenceRefusal(e: unknown): WriteFailure {
  if (e instanceof FencingError && e.reason === "once-used") {
    return {
      kind: "unknown",
      error: "this command was carried out or attempted before (its once-only id is recorded)",
    };
  }
  if (e instanceof FencingError && e.reason === "stopping") return STOPPED;
  // The outlet's reboot hold, as the bucket's lease records it (this holder's or a previous one's).
  if (e instanceof FencingError && e.reason === "held")
    return { kind: "busy", error: `${e.message}; not sent` };
  return {
    kind: "fenced",
    error: `this replica may not write to the PDU now (${describeError(e)}); not sent`,
  };
}

/** Whether the PDU may have acted on any of the writes (then an early poll shows what it did). */
export const mayHaveActed = (results: readonly WriteResult[]): boolean =>
  results.some((r) => r.ok || r.kind === "unknown");

/** A command's outcome from its outlets' writes: 200 when every one is done, else why not. */
export function commandOutcome(
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
  const failed = written.filter((w): w is FailedWrite => !w.ok);
  if (failed.length === 0) return { ok: true, status: 200, instanceId: id, target, action, outlets };

  const what = `${action} on ${describeTarget(target)} of instance ${id}`;
  const extra = target.kind === "group" ? { outlets } : {};
  const succeeded = written.filter((w) => w.ok).map((w) => outletName(w.target));
  // An outlet: its one error. A group: every failure and every success, never a silent partial.
  const why =
    target.kind === "group"
      ? `failed on ${failed.length} of ${written.length} outlets: ${describeFailures(failed)}; succeeded on: ${listSome(succeeded, 64)}`
      : (failed[0]?.error ?? "failed");
  return failedCommand(what, why, failed, succeeded.length > 0, row.idempotent, extra);
}

/** The refusal of a command with failed writes, the most telling kind first. */
function failedCommand(
  what: string,
  why: string,
  failed: readonly FailedWrite[],
  anySucceeded: boolean,
  repeatable: boolean,
  extra: { outlets?: readonly OutletResult[] },
): Refusal {
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
  // Refused in the outlets' turns, nothing sent: the first such kind when nothing else failed.
  const refusal = failed.every((f) => f.kind === failed[0]?.kind) && !anySucceeded ? failed[0]?.kind : null;
  if (refusal === "superseded") {
    return refuse(409, "Superseded", `${what} was not sent: ${why}`, { ...extra, problem: "superseded" });
  }
  if (refusal === "busy") {
    return refuse(409, "Outlet busy", `${what} was refused: ${why}`, { ...extra, problem: "outlet-busy" });
  }
  if (refusal === "relay") {
    const retryAt = Math.max(...failed.map((f) => f.retryAt ?? 0));
    return refuse(409, "Relay protection", `${what} was refused: ${why}`, {
      ...extra,
      retryAfter: retryAfterOf(retryAt),
      problem: "relay-protection",
    });
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
  if (refusal === "unsupported") {
    return refuse(409, UNSUPPORTED_TITLE, `${what} was refused: ${why}`, extra);
  }
  if (!anySucceeded && failed.every((f) => f.kind === "timeout")) {
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
function describeFailures(failed: readonly FailedWrite[]): string {
  const byError = new Map<string, string[]>();
  for (const f of failed) {
    const names = byError.get(f.error) ?? [];
    names.push(outletName(f.target));
    byError.set(f.error, names);
  }
  return [...byError].map(([error, names]) => `${listSome(names, 64)} (${error})`).join("; ");
}

/** The refusal of a settings write that failed (`what` names the write). */
export function settingsFailure(what: string, failed: WriteFailure): Refusal {
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
    case "relay":
      return refuse(409, "Relay protection", why, {
        retryAfter: retryAfterOf(failed.retryAt),
        problem: "relay-protection",
      });
    case "superseded":
      return refuse(409, "Superseded", why, { problem: "superseded" });
    case "refused":
      return refuse(409, "Refused by the PDU", why);
    case "unsupported":
      return refuse(409, UNSUPPORTED_TITLE, why);
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
