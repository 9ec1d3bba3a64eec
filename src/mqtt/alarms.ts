/**
 * Loads and alarms over MQTT (docs/mqtt.md, "Loads and alarms"), driven by the publisher with each
 * snapshot's load report (src/pdu/load.ts):
 *
 * - `P/<instance>/<deviceId>/entity/<key>/load` and `…/outlets/<i>/load`: `{"percent":…,"state":…}`,
 *   retained, QoS 1, published when the payload changes, cleared (empty retained) when the thing has
 *   no load any more;
 * - `P/<instance>/alarms`: the active alarms as a JSON list, retained, QoS 1, when it changes; a
 *   list that does not fit in one packet the broker takes is cut to the most severe that do (the
 *   report lists them critical first), never left as an earlier poll's list, and
 *   `P/<instance>/alarms/omitted` (retained) says how many it leaves out (0 when none);
 * - `P/<instance>/events`: one message per alarm raised, changed or cleared, and one per trap the
 *   PDU sent (`event_type` first, for Home Assistant's event entity), not retained, QoS 1; a PDU whose alarms flap is folded
 *   (src/log-limit.ts): the first {@link EVENT_BURST} events of an instance's 10 s window are sent,
 *   then one `folded` event with the count of the rest.
 *
 * Hidden things (overrides) have no topics and are left out of the list and the events. Ids that
 * cannot be topic levels are skipped through the publisher's guard. Per instance it keeps the
 * payload last published on each load topic and the list, so an unchanged report sends nothing;
 * and, with the report it last published, the tracker's flags (src/pdu/load.ts: a point's
 * `changed`, a report's `samePoints`, its `alarms` the same array while the list says the same)
 * let a report that changed nothing cost nothing: no topic is built, no payload serialised.
 */
import { LineFolder } from "../log-limit.js";
import { alarmJson, loadJson } from "../pdu/load.js";
import type { ActiveAlarm, AlarmChange, LoadPoint, LoadReport } from "../pdu/model.js";
import type { TrapEvent } from "../pdu/trap-events.js";
import type { TopicIdGuard, Topics } from "./topics.js";
import type { Sink } from "./types.js";

interface InstanceTopics {
  /** Load topic → payload last published. */
  loads: Map<string, string>;
  /** The serial of the load report last published (0: none yet). */
  serial: number;
  /** The alarm list last published (the report's array, and its JSON), or null before the first. */
  alarmList: readonly ActiveAlarm[] | null;
  alarms: string | null;
  /** The omitted count last published, or null before the first. */
  omitted: number | null;
}

/** The Home Assistant event types of the `events` topic (`folded`: events left out of a flood). */
export const ALARM_EVENT_TYPES = ["raised", "changed", "cleared", "folded", "trap"] as const;

/** Alarm events of one instance sent per 10 s window before the rest are only counted. */
export const EVENT_BURST = 100;

export class AlarmTopics {
  readonly #sink: Sink;
  readonly #topics: Topics;
  readonly #guard: TopicIdGuard;
  readonly #instances = new Map<string, InstanceTopics>();
  /** Per instance (configured ids only): which events go out, and the count of the rest. */
  readonly #events: LineFolder<string>;

  constructor(sink: Sink, topics: Topics, guard: TopicIdGuard) {
    this.#sink = sink;
    this.#topics = topics;
    this.#guard = guard;
    this.#events = new LineFolder<string>(
      ({ key, count, windowMs }) => {
        const payload = {
          event_type: "folded",
          atUtc: new Date().toISOString(),
          instanceId: key,
          count,
          windowS: Math.round(windowMs / 1000),
        };
        this.#sink.publish(this.#topics.events(key), JSON.stringify(payload), 1, false);
      },
      { burst: EVENT_BURST },
    );
  }

  /**
   * Publishes what the report changed (every retained topic again when `force`: after a connect)
   * and one event per change.
   */
  publish(id: string, report: LoadReport, changes: readonly AlarmChange[], force: boolean): void {
    let state = this.#instances.get(id);
    if (state === undefined) {
      state = { loads: new Map(), serial: 0, alarmList: null, alarms: null, omitted: null };
      this.#instances.set(id, state);
    }
    this.#loads(id, state, report, force);
    this.#list(id, state, report, force);
    for (const { change, alarm, at } of changes) {
      if (alarm.hidden === true || !this.#events.admit(id, id)) continue;
      const payload = { event_type: change, atUtc: new Date(at).toISOString(), ...alarmJson(id, alarm) };
      this.#sink.publish(this.#topics.events(id), JSON.stringify(payload), 1, false);
    }
  }

  /**
   * One event of a trap the PDU sent (src/traps/), on the same topic and fold as the alarm events:
   * `event_type` "trap", its kind, the notification's name, the outlet and state it names.
   */
  trap(id: string, at: number, event: TrapEvent): void {
    if (!this.#events.admit(id, id)) return;
    const payload = { event_type: "trap", atUtc: new Date(at).toISOString(), instanceId: id, ...event };
    this.#sink.publish(this.#topics.events(id), JSON.stringify(payload), 1, false);
  }

  /**
   * The active alarms, when the report's list is another than the one last published: whole, or cut
   * to what fits in one packet, with the count left out.
   */
  #list(id: string, state: InstanceTopics, report: LoadReport, force: boolean): void {
    if (!force && report.alarms === state.alarmList) return;
    state.alarmList = report.alarms;
    const topic = this.#topics.alarms(id);
    const items = report.alarms.filter((a) => a.hidden !== true).map((a) => JSON.stringify(alarmJson(id, a)));
    const shown = this.#fitting(topic, items);
    const list = `[${items.slice(0, shown).join(",")}]`;
    if (force || list !== state.alarms) {
      state.alarms = list;
      this.#sink.publish(topic, list, 1, true);
    }
    const omitted = items.length - shown;
    if (force || omitted !== state.omitted) {
      state.omitted = omitted;
      this.#sink.publish(this.#topics.alarmsOmitted(id), String(omitted), 1, true);
    }
  }

  /** How many of `items` (from the first) fit in one list message on `topic`. */
  #fitting(topic: string, items: readonly string[]): number {
    const fits = (n: number) => this.#sink.fits(topic, `[${items.slice(0, n).join(",")}]`, 1);
    if (fits(items.length)) return items.length;
    let low = 0; // fits
    let high = items.length; // does not
    while (high - low > 1) {
      const mid = (low + high) >>> 1;
      if (fits(mid)) low = mid;
      else high = mid;
    }
    return low;
  }

  /**
   * The load topics. A report that follows the one last published with the same points (the
   * tracker says so) costs only its changed points; any other walks them all and clears the topics
   * of the things that are gone.
   */
  #loads(id: string, state: InstanceTopics, report: LoadReport, force: boolean): void {
    if (!force && report.serial === state.serial) return; // the same report again
    if (!force && report.samePoints && report.comparedWith === state.serial) {
      for (const point of report.points) if (point.changed) this.#load(id, state.loads, point, false);
    } else if (report.points.length > 0 || state.loads.size > 0) {
      const last = state.loads;
      state.loads = new Map();
      for (const point of report.points) this.#load(id, state.loads, point, force, last);
      for (const topic of last.keys()) if (!state.loads.has(topic)) this.#sink.publish(topic, "", 1, true);
    }
    state.serial = report.serial;
  }

  /**
   * Publishes one point's load topic when its payload differs from the one in `published` (or
   * `before`, the last walk's, when given) or when `force`, and records it in `published`. A point
   * without a topic (hidden, or an id that cannot be a topic level) publishes nothing. A payload
   * whose state is the one published before (only the percent moved, which it does with the
   * current) goes at QoS 0, like the measurements; a new state, a first payload and a resync at
   * QoS 1. A QoS 0 message is lost only with its connection, and every connect republishes the
   * loads.
   */
  #load(
    id: string,
    published: Map<string, string>,
    point: LoadPoint,
    force: boolean,
    before: ReadonlyMap<string, string> = published,
  ): void {
    if (point.hidden === true || !this.#guard.ok(id, "device id", point.deviceId)) return;
    const { target } = point;
    if (target.kind === "entity" && !this.#guard.ok(id, "entity key", target.key)) return;
    const topic =
      target.kind === "outlet"
        ? this.#topics.outletLoad(id, point.deviceId, target.index)
        : this.#topics.entityLoad(id, point.deviceId, target.key);
    const payload = JSON.stringify(loadJson(point));
    const last = before.get(topic);
    if (force || last !== payload)
      this.#sink.publish(topic, payload, !force && sameState(last, point) ? 0 : 1, true);
    published.set(topic, payload);
  }
}

/** Whether `last`, a load payload published before, has `point`'s state. */
function sameState(last: string | undefined, point: LoadPoint): boolean {
  return last !== undefined && last.endsWith(`"state":"${point.state}"}`);
}
