/**
 * What a webhook carries (docs/events.md, Webhooks): the bus's events turned into one JSON body
 * each, `{ id, time, type, instance, ... }`, with an id derived from the event's content where the
 * same event can be seen again (an alarm's raise by a new holder, a sequence's wave by a resumed
 * run), so that it keeps its id across a restart or a handover and a receiver can drop a repeat.
 */
import { createHash, randomUUID } from "node:crypto";
import type { ControlEvent, SequenceEvent } from "../bus.js";
import type { ActiveAlarm, AlarmChange } from "../pdu/model.js";

export type WebhookKind = "alarm" | "control" | "availability" | "sequence";

export const WEBHOOK_KINDS: readonly WebhookKind[] = ["alarm", "control", "availability", "sequence"];

/** One event to deliver: its id, kind, instance (null: about the fleet) and the body sent as is. */
export interface WebhookEvent {
  readonly id: string;
  readonly kind: WebhookKind;
  readonly instance: string | null;
  readonly body: string;
}

/** A stable id from the parts that make an event the same event (32 hex digits). */
export function contentId(...parts: readonly (string | number | boolean | null)[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 32);
}

function build(
  id: string,
  kind: WebhookKind,
  type: string,
  instance: string | null,
  time: number,
  more: object,
): WebhookEvent {
  const body = JSON.stringify({ id, time: new Date(time).toISOString(), type, instance, ...more });
  return { id, kind, instance, body };
}

/** An alarm as a webhook shows it: what the other surfaces show, nothing hidden. */
export function alarmFields(alarm: ActiveAlarm): object {
  return {
    id: alarm.id,
    deviceId: alarm.deviceId,
    target: alarm.target,
    name: alarm.name,
    source: alarm.source,
    severity: alarm.severity,
    percent: alarm.percent,
    reported: alarm.reported,
    since: new Date(alarm.since).toISOString(),
  };
}

/**
 * An alarm raised, changed or cleared. A raise's id is the alarm's and its start's (a new holder's
 * tracker raising the same alarm again is kept back by the delivery state); a change's and a
 * clear's add what they say and when.
 */
export function alarmEvent(instance: string, change: AlarmChange): WebhookEvent {
  const { alarm } = change;
  const id =
    change.change === "raised"
      ? contentId("alarm", instance, alarm.id, "raised", alarm.since)
      : contentId(
          "alarm",
          instance,
          alarm.id,
          change.change,
          alarm.since,
          alarm.severity,
          alarm.reported,
          change.at,
        );
  return build(id, "alarm", `alarm.${change.change}`, instance, change.at, { alarm: alarmFields(alarm) });
}

/** A cleared alarm that the new holder (or a restarted bridge) no longer sees at its first poll. */
export function alarmGoneEvent(
  instance: string,
  told: { readonly id: string; readonly since: number; readonly fields: object },
  at: number,
): WebhookEvent {
  const id = contentId("alarm", instance, told.id, "cleared", told.since);
  return build(id, "alarm", "alarm.cleared", instance, at, { alarm: told.fields });
}

/** An instance available (polled successfully after none or failures) or unavailable. */
export function availabilityEvent(
  instance: string,
  online: boolean,
  at: number,
  error: string | null,
): WebhookEvent {
  const type = online ? "instance.available" : "instance.unavailable";
  return build(contentId("availability", instance, online, at), "availability", type, instance, at, {
    ...(error === null ? {} : { error: clip(error, 512) }),
  });
}

/** A control outcome the control core decided (a command or settings write, done, refused or failed). */
export function controlEvent(event: ControlEvent & { instanceId: string }, at: number): WebhookEvent {
  const by =
    event.source.surface === "console"
      ? { surface: "console", user: event.source.user.name }
      : { surface: event.source.surface };
  return build(randomUUID().replaceAll("-", ""), "control", "control.outcome", event.instanceId, at, {
    action: event.action,
    target: event.target,
    status: event.status,
    ...(event.problem === undefined ? {} : { problem: event.problem }),
    ...(event.detail === undefined ? {} : { detail: clip(event.detail, 512) }),
    ...(event.asset === undefined ? {} : { asset: event.asset }),
    source: by,
  });
}

/** A sequence's wave begun or its run ended; the same step of a resumed run has the same id. */
export function sequenceEvent(event: SequenceEvent, at: number): WebhookEvent {
  const ended = event.state === "done" || event.state === "stopped";
  const id = contentId("sequence", event.id, ended ? event.state : "wave", event.wave);
  return build(id, "sequence", ended ? `sequence.${event.state}` : "sequence.wave", null, at, {
    sequence: event.id,
    action: event.action,
    state: event.state,
    wave: event.wave,
    waves: event.waves,
    executed: event.executed,
    failed: event.failed,
  });
}

const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max)}…`);
