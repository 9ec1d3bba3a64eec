/**
 * The audit line: every control attempt, from either surface, is logged exactly once with where it
 * came from, what it targeted, the action and the outcome, and told to the bus as a `control` event
 * (the metrics count them, the console shows them, the login check learns from them). Surfaces call
 * this with the final outcome (also for requests refused before reaching the core); the key is never
 * passed in. A console command names the signed-in user (`user` is the subject, `userName` the
 * name), one made with the API key says `user: "api-key"`.
 *
 * Lines an outsider can repeat at will are folded (src/log-limit.ts): a burst of refusals of the
 * same kind (a flood of garbage MQTT commands) writes its first lines and then one line with the
 * count of the rest ("control … and 4,812 more like this in the last 10 s", `folded`: the count);
 * a burst of commands refused by the outlet's turns or its relay protection is audited once (its
 * first line, then the count); the requests a settings write merged (./settings-bursts.ts) are
 * audited once, by the burst's first. The bus still hears every attempt (the metrics count each
 * one). A done command is never folded.
 */
import type { ControlEvent, EventBus } from "../bus.js";
import { FoldedLog } from "../log-limit.js";
import type { Logger } from "../log.js";
import type { ControlProblem, ControlSource, SettingsTarget } from "./types.js";

/** One audited attempt: the bus's {@link ControlEvent}, `fromCore` false unless said. */
export type AuditEntry = Omit<ControlEvent, "fromCore"> & {
  readonly fromCore?: boolean;
  /** The replica that received the request and handed it to this one (several replicas). */
  readonly via?: string;
  /** A settings write that merged several requests: how many (the line of the burst's first). */
  readonly merged?: number;
};

/** Where the audit goes: the log line, and the bus. */
export interface AuditSink {
  readonly logger: Logger;
  readonly bus: EventBus;
}

/**
 * How an audit line is folded: lines of one `key` fold together, the first {@link AUDIT_BURST} of a
 * window written; `once` writes only the first (a burst of the turns' refusals is audited once);
 * `quiet` counts every line into the summary and writes none (the requests a settings burst merged
 * into its first's write).
 */
export interface AuditFold {
  readonly key: string;
  readonly once?: boolean;
  readonly quiet?: boolean;
}

/** Lines of one key written per 10 s window before the rest are only counted. */
export const AUDIT_BURST = 20;

/** The refusals of the outlets' turns and relay protection: a flood of commands for one outlet makes them. */
const TURN_PROBLEMS: ReadonlySet<string | undefined> = new Set<ControlProblem>([
  "superseded",
  "outlet-busy",
  "expired",
  "relay-protection",
]);

/** Whether `problem` is a refusal of the outlets' turns or of relay protection (audited once per burst). */
export const isTurnRefusal = (problem: string | undefined): boolean => TURN_PROBLEMS.has(problem);

/** The fold of a line a surface did not name one for: the turns' refusals, once per burst per instance. */
function defaultFold(entry: AuditEntry): AuditFold | null {
  if (entry.fromCore !== true || !isTurnRefusal(entry.problem)) return null;
  return { key: `${entry.source.surface}|${entry.instanceId ?? ""}|${entry.problem ?? ""}`, once: true };
}

interface Folds {
  readonly loud: FoldedLog;
  readonly once: FoldedLog;
  readonly quiet: FoldedLog;
}

/** One pair of folds per logger (each surface's audit logger). */
const FOLDS = new WeakMap<Logger, Folds>();

function foldsOf(logger: Logger): Folds {
  let folds = FOLDS.get(logger);
  if (folds === undefined) {
    folds = {
      loud: new FoldedLog(logger, { burst: AUDIT_BURST }),
      once: new FoldedLog(logger, { burst: 1 }),
      quiet: new FoldedLog(logger, { burst: 0 }),
    };
    FOLDS.set(logger, folds);
  }
  return folds;
}

/**
 * Audits one attempt: the bus's `control` event, and the log line unless `fold` (default: the
 * turns' refusals, per instance) folds it; `null` never folds.
 */
export function auditControl(to: AuditSink, entry: AuditEntry, fold?: AuditFold | null): void {
  const { via, merged, ...event } = entry;
  to.bus.emit("control", { ...event, fromCore: entry.fromCore === true });
  const line = {
    audit: "control",
    source: entry.source.surface,
    client: entry.source.surface === "mqtt" ? undefined : entry.source.client,
    topic: entry.source.surface === "mqtt" ? entry.source.topic : undefined,
    ...auditUser(entry.source),
    instance: entry.instanceId,
    asset: entry.asset,
    target: entry.target === null ? null : describeTarget(entry.target),
    action: entry.action,
    status: entry.status,
    outcome: entry.status === 200 ? "done" : entry.status >= 500 ? "failed" : "refused",
    detail: entry.detail,
    problem: entry.problem,
    via,
    merged,
  };
  const level = entry.status === 200 ? "info" : "warn";
  const folding = fold === undefined ? defaultFold(entry) : fold;
  if (folding === null) to.logger[level](line, "control");
  else {
    const folds = foldsOf(to.logger);
    const log = folding.quiet === true ? folds.quiet : folding.once === true ? folds.once : folds.loud;
    log.write(level, folding.key, line, "control");
  }
}

/** Who the line names: the console user (subject and name), `api-key` once the key matched, else nobody. */
function auditUser(source: ControlSource): { user?: string; userName?: string } {
  if (source.surface === "console") return { user: source.user.sub, userName: source.user.name };
  return source.surface === "rest" && source.key === true ? { user: "api-key" } : {};
}

export function describeTarget(target: SettingsTarget): string {
  switch (target.kind) {
    case "outlet":
      return `outlet ${target.deviceId}/${target.index}`;
    case "group":
      return `group ${target.groupKey}`;
    case "device":
      return `device ${target.deviceId}`;
    case "entity":
      return `entity ${target.deviceId}/${target.entityKey}`;
  }
}
