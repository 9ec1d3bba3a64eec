/**
 * The audit line: every control attempt, from either surface, is logged exactly once with where it
 * came from, what it targeted, the action and the outcome, and told to the bus as a `control` event
 * (the metrics count them, the console shows them, the login check learns from them). Surfaces call
 * this with the final outcome (also for requests refused before reaching the core); the key is never
 * passed in. A console command names the signed-in user (`user` is the subject, `userName` the
 * name), one made with the API key says `user: "api-key"`.
 */
import type { ControlEvent, EventBus } from "../bus.js";
import type { Logger } from "../log.js";
import type { ControlSource, SettingsTarget } from "./types.js";

/** One audited attempt: the bus's {@link ControlEvent}, `fromCore` false unless said. */
export type AuditEntry = Omit<ControlEvent, "fromCore"> & {
  readonly fromCore?: boolean;
  /** The replica that received the request and handed it to this one (several replicas). */
  readonly via?: string;
};

/** Where the audit goes: the log line, and the bus. */
export interface AuditSink {
  readonly logger: Logger;
  readonly bus: EventBus;
}

export function auditControl(to: AuditSink, entry: AuditEntry): void {
  const { via, ...event } = entry;
  to.bus.emit("control", { ...event, fromCore: entry.fromCore === true });
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
    via,
  };
  if (entry.status === 200) to.logger.info(line, "control");
  else to.logger.warn(line, "control");
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
