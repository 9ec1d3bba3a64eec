/**
 * Alarms about more than one PDU: an asset's redundancy lost, a feed's loss projected to overload
 * an entity. They have the shape of the instances' alarms (src/pdu/model.ts `ActiveAlarm`,
 * `AlarmChange`, docs/alarms.md) with two more sources, so every surface that lists alarms lists
 * these the same way; what they are listed under is a scope that no instance id can be (instance
 * ids are A-Za-z0-9_-), in the place of the instance:
 *
 * - `$assets`: redundancy lost. `deviceId` is the asset id, `target` `{ kind: "device" }` (the
 *   asset as a whole), `name` its label, id `<assetId>/asset/redundancy`.
 * - `$feeds`: feed-loss. `deviceId` and `target` are the entity's (its device, `{ kind: "entity",
 *   key }`), `instanceId` its instance and `feed` the feed whose loss would overload it; id
 *   `<feed>/<instance>/<deviceId>/entity/<key>/feed-loss`.
 */
import { alarmJson, type AlarmJson } from "../pdu/load.js";
import type { ActiveAlarm, AlarmChange } from "../pdu/model.js";

/** Where fleet alarms are listed in the place of an instance id. */
export const ASSETS_SCOPE = "$assets";
export const FEEDS_SCOPE = "$feeds";
export type FleetScope = typeof ASSETS_SCOPE | typeof FEEDS_SCOPE;

/** The two sources beside an instance alarm's `load`, `tripped` and `pdu`. */
export type FleetAlarmSource = "redundancy" | "feed-loss";

export interface FleetAlarm extends ActiveAlarm {
  readonly scope: FleetScope;
  readonly source: FleetAlarmSource;
  /** feed-loss: the instance of the entity. */
  readonly instanceId?: string;
  /** feed-loss: the feed whose loss is projected. */
  readonly feed?: string;
}

export interface FleetAlarmChange extends Omit<AlarmChange, "alarm"> {
  readonly alarm: FleetAlarm;
}

/** Severity first, then id (as the instances' alarm lists). */
export function compareFleetAlarms(a: FleetAlarm, b: FleetAlarm): number {
  if (a.severity !== b.severity) return a.severity === "critical" ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The change from `before` to `now` of one alarm id (either may be absent), or null. */
export function alarmChange(
  before: FleetAlarm | null,
  now: FleetAlarm | null,
  at: number,
): FleetAlarmChange | null {
  if (now !== null && before === null) return { change: "raised", alarm: now, at };
  if (now === null && before !== null) return { change: "cleared", alarm: before, at };
  if (
    now !== null &&
    before !== null &&
    (now.severity !== before.severity || now.reported !== before.reported)
  )
    return { change: "changed", alarm: now, at };
  return null;
}

/**
 * A fleet alarm as REST and the console write an alarm (src/pdu/load.ts `alarmJson`, with the scope
 * as its `instanceId`), and for a feed-loss alarm the feed and the entity's instance.
 */
export function fleetAlarmJson(alarm: FleetAlarm): AlarmJson & { feed?: string; entityInstanceId?: string } {
  return {
    ...alarmJson(alarm.scope, alarm),
    ...(alarm.feed === undefined ? {} : { feed: alarm.feed }),
    ...(alarm.instanceId === undefined ? {} : { entityInstanceId: alarm.instanceId }),
  };
}
