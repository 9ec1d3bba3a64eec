/**
 * Loads and alarms over MQTT (docs/mqtt.md, "Loads and alarms"), driven by the publisher with each
 * snapshot's load report (src/pdu/load.ts):
 *
 * - `P/<instance>/<deviceId>/entity/<key>/load` and `…/outlets/<i>/load`: `{"percent":…,"state":…}`,
 *   retained, QoS 1, published when the payload changes, cleared (empty retained) when the thing has
 *   no load any more;
 * - `P/<instance>/alarms`: the active alarms as a JSON list, retained, QoS 1, when it changes;
 * - `P/<instance>/events`: one message per alarm raised, changed or cleared (`event_type` first, for
 *   Home Assistant's event entity), not retained, QoS 1.
 *
 * Hidden things (overrides) have no topics and are left out of the list and the events. Ids that
 * cannot be topic levels are skipped through the publisher's guard. Per instance it keeps the
 * payload last published on each load topic and the list, so an unchanged report sends nothing.
 */
import { alarmJson, loadJson } from "../pdu/load.js";
import type { AlarmChange, LoadReport } from "../pdu/model.js";
import type { Sink } from "./publisher.js";
import type { TopicIdGuard, Topics } from "./topics.js";

interface InstanceTopics {
  /** Load topic → payload last published. */
  loads: Map<string, string>;
  /** The list last published on `alarms`, or null before the first. */
  alarms: string | null;
}

/** The Home Assistant event types of the `events` topic. */
export const ALARM_EVENT_TYPES = ["raised", "changed", "cleared"] as const;

export class AlarmTopics {
  readonly #sink: Sink;
  readonly #topics: Topics;
  readonly #guard: TopicIdGuard;
  readonly #instances = new Map<string, InstanceTopics>();

  constructor(sink: Sink, topics: Topics, guard: TopicIdGuard) {
    this.#sink = sink;
    this.#topics = topics;
    this.#guard = guard;
  }

  /**
   * Publishes what the report changed (every retained topic again when `force`: after a connect)
   * and one event per change.
   */
  publish(id: string, report: LoadReport, changes: readonly AlarmChange[], force: boolean): void {
    let state = this.#instances.get(id);
    if (state === undefined) {
      state = { loads: new Map(), alarms: null };
      this.#instances.set(id, state);
    }
    if (report.points.length > 0 || state.loads.size > 0) this.#loads(id, state, report, force);
    const list = JSON.stringify(report.alarms.filter((a) => a.hidden !== true).map((a) => alarmJson(id, a)));
    if (force || list !== state.alarms) {
      state.alarms = list;
      this.#sink.publish(this.#topics.alarms(id), list, 1, true);
    }
    for (const { change, alarm, at } of changes) {
      if (alarm.hidden === true) continue;
      const payload = { event_type: change, atUtc: new Date(at).toISOString(), ...alarmJson(id, alarm) };
      this.#sink.publish(this.#topics.events(id), JSON.stringify(payload), 1, false);
    }
  }

  #loads(id: string, state: InstanceTopics, report: LoadReport, force: boolean): void {
    const seen = new Map<string, string>();
    for (const point of report.points) {
      if (point.hidden === true || !this.#guard.ok(id, "device id", point.deviceId)) continue;
      const { target } = point;
      if (target.kind === "entity" && !this.#guard.ok(id, "entity key", target.key)) continue;
      const topic =
        target.kind === "outlet"
          ? this.#topics.outletLoad(id, point.deviceId, target.index)
          : this.#topics.entityLoad(id, point.deviceId, target.key);
      const payload = JSON.stringify(loadJson(point));
      seen.set(topic, payload);
      if (force || state.loads.get(topic) !== payload) this.#sink.publish(topic, payload, 1, true);
    }
    for (const topic of state.loads.keys()) if (!seen.has(topic)) this.#sink.publish(topic, "", 1, true);
    state.loads = seen;
  }
}
