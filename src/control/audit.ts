/**
 * The audit line: every control attempt, from either surface, is logged exactly once with where it
 * came from, what it targeted, the action and the outcome. Surfaces call this with the final
 * outcome (also for requests refused before reaching the core); the key is never passed in. A
 * console command names the signed-in user (`user` is the subject, `userName` the name), one made
 * with the API key says `user: "api-key"`.
 */
import type { Logger } from "../log.js";
import type { ControlSource, SettingsTarget } from "./types.js";

export interface AuditEntry {
  readonly source: ControlSource;
  readonly instanceId: string | null;
  /** A control target, or (for a settings write) also a device or an entity. */
  readonly target: SettingsTarget | null;
  readonly action: string | null;
  /** HTTP-style status of the outcome (200 done; 4xx refused; 5xx failed). */
  readonly status: number;
  readonly detail?: string;
  /** The outcome's specific problem (e.g. `outcome-unknown`), when it has one. */
  readonly problem?: string;
}

/** Told of every audited attempt (the metrics count them); see {@link observeControlAudit}. */
const observers = new Set<(entry: AuditEntry) => void>();

/** Calls `observer` for every audited control attempt until the returned function is called. */
export function observeControlAudit(observer: (entry: AuditEntry) => void): () => void {
  observers.add(observer);
  return () => observers.delete(observer);
}

export function auditControl(logger: Logger, entry: AuditEntry): void {
  for (const observer of observers) {
    try {
      observer(entry);
    } catch {
      // Counting must never keep an attempt from its audit line.
    }
  }
  const line = {
    audit: "control",
    source: entry.source.surface,
    client: entry.source.surface === "mqtt" ? undefined : entry.source.client,
    topic: entry.source.surface === "mqtt" ? entry.source.topic : undefined,
    ...auditUser(entry.source),
    instance: entry.instanceId,
    target: entry.target === null ? null : describeTarget(entry.target),
    action: entry.action,
    status: entry.status,
    outcome: entry.status === 200 ? "done" : entry.status >= 500 ? "failed" : "refused",
    detail: entry.detail,
    problem: entry.problem,
  };
  if (entry.status === 200) logger.info(line, "control");
  else logger.warn(line, "control");
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
