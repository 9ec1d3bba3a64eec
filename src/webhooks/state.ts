/**
 * What the webhooks part keeps of a scope (one process: everything, scope 0; among replicas: a
 * bucket) so that a restart or the scope's next holder loses nothing and repeats nothing it told:
 * the events not yet acknowledged by every receiver they are for, in order, with the receivers
 * still owed; the alarms told as raised (a new tracker raising them again is kept back, and those
 * gone by its first poll are told cleared); each instance's availability told.
 *
 * What is read back was written by this bridge, another replica or anyone with access to the
 * directory or engine: it is checked whole here ({@link readSaved}) before anything is taken from it.
 */
import type { WebhookKind } from "./events.js";
import { WEBHOOK_KINDS } from "./events.js";

export const SAVED_FORMAT = "pdu-bridge-webhooks";
export const SAVED_VERSION = 1;

export interface SavedEvent {
  readonly id: string;
  readonly kind: WebhookKind;
  readonly instance: string | null;
  readonly body: string;
  /** The receivers (labels) still owed it. */
  readonly pending: readonly string[];
}

/** An alarm told as raised: enough to tell it cleared. */
export interface ToldAlarm {
  readonly instance: string;
  readonly id: string;
  readonly since: number;
  /** The alarm as the raise showed it (events.ts `alarmFields`). */
  readonly fields: Readonly<Record<string, unknown>>;
}

export interface Saved {
  readonly format: typeof SAVED_FORMAT;
  readonly v: typeof SAVED_VERSION;
  readonly events: readonly SavedEvent[];
  readonly alarms: readonly ToldAlarm[];
  readonly online: Readonly<Record<string, boolean>>;
}

/** Bounds on what is read back. */
const MAX_EVENTS = 16 * 10_000;
const MAX_BODY = 16_384;
const MAX_ALARMS = 100_000;
const MAX_TEXT = 256;
const ID = /^[0-9a-f]{32}$/;

export class SavedError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const text = (v: unknown, max = MAX_TEXT): v is string => typeof v === "string" && v.length <= max;

/** The saved state, checked whole; throws {@link SavedError} saying what is wrong. */
export function readSaved(value: unknown): Saved {
  if (!isObject(value) || value.format !== SAVED_FORMAT)
    throw new SavedError("is not a webhooks state of this bridge");
  if (value.v !== SAVED_VERSION)
    throw new SavedError(`is version ${String(value.v)}, this bridge reads ${SAVED_VERSION}`);
  const { events, alarms, online } = value;
  if (!Array.isArray(events) || events.length > MAX_EVENTS)
    throw new SavedError("events: not a bounded list");
  if (!Array.isArray(alarms) || alarms.length > MAX_ALARMS)
    throw new SavedError("alarms: not a bounded list");
  if (!isObject(online)) throw new SavedError("online: not a mapping");
  events.forEach((e, i) => checkEvent(e, i));
  alarms.forEach((a, i) => checkAlarm(a, i));
  for (const [instance, state] of Object.entries(online))
    if (!text(instance) || typeof state !== "boolean")
      throw new SavedError(`online.${instance}: not a boolean`);
  return value as unknown as Saved;
}

function checkEvent(e: unknown, i: number): void {
  const kinds: readonly unknown[] = WEBHOOK_KINDS;
  if (
    !isObject(e) ||
    !text(e.id) ||
    !ID.test(e.id) ||
    !kinds.includes(e.kind) ||
    !(e.instance === null || text(e.instance)) ||
    !text(e.body, MAX_BODY) ||
    !Array.isArray(e.pending) ||
    e.pending.length > 16 ||
    !e.pending.every((p) => text(p, 63))
  )
    throw new SavedError(`events[${i}]: not an event`);
}

function checkAlarm(a: unknown, i: number): void {
  if (
    !isObject(a) ||
    !text(a.instance) ||
    !text(a.id, 1024) ||
    typeof a.since !== "number" ||
    !Number.isFinite(a.since) ||
    !isObject(a.fields) ||
    JSON.stringify(a.fields).length > 4096
  )
    throw new SavedError(`alarms[${i}]: not an alarm`);
}
