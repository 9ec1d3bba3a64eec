/**
 * Turns store events into MQTT messages: the hot path (1000 PDUs × 24 outlets every few seconds).
 *
 * Rules (docs/mqtt.md):
 * - Retained topics (outlet state and label, instance status, discovery) are published when their
 *   payload changes, all again after every (re)connect, and cleared (empty retained payload) when
 *   what they describe disappears from the snapshot.
 * - Value topics (measurements, device state and alarm; not retained) are published when their
 *   payload changes and otherwise again once `refreshMs` passed since they were last sent, so Home
 *   Assistant's `expire_after` never runs out on a live sensor. Refreshes ride on polls: an instance
 *   whose poll fails goes `offline` and its values are not refreshed until a poll succeeds again.
 * - Nothing is queued while disconnected; the next connect republishes retained topics and the next
 *   poll of each instance republishes all its values.
 *
 * Per instance there is one flat Map of topic → last payload and send time; publishes are not
 * awaited (QoS 0 for values, QoS 1 for retained topics).
 */
import type { InstanceConfig } from "../config/schema.js";
import type { Alarm, Snapshot } from "../pdu/model.js";
import type { SnapshotStore, StoreEvent } from "../poller/store.js";
import { buildDiscovery, discoveryShape, discoverySignature, type DiscoveryOptions } from "./discovery.js";
import type { TopicIdGuard, Topics } from "./topics.js";

/** What the publisher needs of the connection. */
export interface Sink {
  readonly connected: boolean;
  publish(topic: string, payload: string, qos: 0 | 1, retain: boolean): boolean;
}

export interface PublisherOptions {
  readonly sink: Sink;
  readonly store: SnapshotStore;
  readonly instances: readonly InstanceConfig[];
  readonly topics: Topics;
  readonly guard: TopicIdGuard;
  /** null: Home Assistant discovery is off. */
  readonly discovery: DiscoveryOptions | null;
  /** Values are republished at least this often while their instance is polled successfully. */
  readonly refreshMs: number;
  readonly now?: () => number;
}

interface Sent {
  payload: string;
  at: number;
  /** Number of the last walk that produced this topic (older: it disappeared). */
  seen: number;
}

interface InstanceState {
  readonly retained: Map<string, Sent>;
  readonly values: Map<string, Sent>;
  /** Last `P/<instance>/status` payload published. */
  status: "online" | "offline" | null;
  /** Publish every value on the next poll (after a reconnect, an outage, a Home Assistant restart). */
  valuesStale: boolean;
  walks: number;
  /** Discovery config topics published (and not cleared since). */
  discovery: Set<string>;
  signature: string | null;
}

type WalkMode = "poll" | "latch" | "resync";

/** Instances resynced per event loop turn. */
const RESYNC_BATCH = 10;

export class Publisher {
  readonly #o: PublisherOptions;
  readonly #now: () => number;
  readonly #states = new Map<string, InstanceState>();
  readonly #actions: ReadonlyMap<string, boolean>;
  #lastDiscoveryUtc: number | null = null;
  /** Instances waiting for {@link resync}. */
  readonly #pending = new Set<string>();
  #draining = false;

  constructor(options: PublisherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#actions = new Map(options.instances.map((i) => [i.id, i.ActionsEnabled]));
  }

  get lastDiscoveryUtc(): number | null {
    return this.#lastDiscoveryUtc;
  }

  /** Store listener. */
  handle(event: StoreEvent): void {
    if (!this.#o.sink.connected) return;
    const state = this.#state(event.instanceId);
    if (event.kind === "failure") {
      this.#setStatus(event.instanceId, state, "offline", false);
      state.valuesStale = true;
      return;
    }
    if (!event.fromPoll) {
      this.#walk(event.instanceId, state, event.snapshot, "latch");
      return;
    }
    this.#setStatus(event.instanceId, state, "online", false);
    this.#walk(event.instanceId, state, event.snapshot, "poll");
    // New or changed entities subscribe only after receiving their config: give them every value
    // with the next poll rather than after a whole refresh period.
    if (this.#discover(event.instanceId, state, event.snapshot, false)) state.valuesStale = true;
  }

  /**
   * After a (re)connect, or when Home Assistant comes online: every instance's status, discovery
   * and retained states again, and every value with its next poll. Done a few instances per event
   * loop turn, so that 1000 PDUs do not block the process for seconds.
   */
  resync(): void {
    for (const id of this.#o.store.ids()) this.#pending.add(id);
    if (this.#draining) return;
    this.#draining = true;
    this.#drain();
  }

  readonly #drain = (): void => {
    if (!this.#o.sink.connected) this.#pending.clear();
    let done = 0;
    for (const id of this.#pending) {
      this.#pending.delete(id);
      this.#resyncOne(id);
      if (++done === RESYNC_BATCH) break;
    }
    if (this.#pending.size > 0) setImmediate(this.#drain);
    else this.#draining = false;
  };

  #resyncOne(id: string): void {
    const status = this.#o.store.get(id);
    if (status === undefined) return;
    const state = this.#state(id);
    const online = status.snapshot !== null && status.consecutiveFailures === 0;
    this.#setStatus(id, state, online ? "online" : "offline", true);
    state.valuesStale = true;
    if (status.snapshot === null) return;
    this.#discover(id, state, status.snapshot, true);
    this.#walk(id, state, status.snapshot, "resync");
  }

  #state(id: string): InstanceState {
    let state = this.#states.get(id);
    if (state === undefined) {
      state = {
        retained: new Map(),
        values: new Map(),
        status: null,
        valuesStale: true,
        walks: 0,
        discovery: new Set(),
        signature: null,
      };
      this.#states.set(id, state);
    }
    return state;
  }

  #setStatus(id: string, state: InstanceState, status: "online" | "offline", force: boolean): void {
    if (!force && state.status === status) return;
    if (status === "online" && state.status !== "online") state.valuesStale = true;
    state.status = status;
    this.#o.sink.publish(this.#o.topics.instanceStatus(id), status, 1, true);
  }

  /**
   * Publishes the instance's discovery when its shape changed (always when forced) and clears the
   * configs that are gone; true when it published. Only config topics are kept, not payloads (they
   * would be the biggest thing in memory at 1000 PDUs), so a change republishes the whole instance.
   */
  #discover(id: string, state: InstanceState, snapshot: Snapshot, force: boolean): boolean {
    const options = this.#o.discovery;
    if (options === null) return false;
    const shape = discoveryShape(id, snapshot, this.#o.guard);
    const signature = discoverySignature(shape);
    if (signature === state.signature && !force) return false;
    const configs = buildDiscovery(options, id, this.#actions.get(id) ?? false, shape);
    const sink = this.#o.sink;
    for (const [topic, payload] of configs) sink.publish(topic, payload, 1, true);
    for (const topic of state.discovery) if (!configs.has(topic)) sink.publish(topic, "", 1, true);
    state.discovery = new Set(configs.keys());
    state.signature = signature;
    this.#lastDiscoveryUtc = this.#now();
    return true;
  }

  /**
   * Publishes what is due for one snapshot. `poll`: retained and value topics; `latch` (only an
   * outlet state changed after a command): retained topics; `resync`: every retained topic.
   */
  #walk(id: string, state: InstanceState, snapshot: Snapshot, mode: WalkMode): void {
    const { sink, topics, guard, refreshMs } = this.#o;
    const now = this.#now();
    const seen = ++state.walks;
    const force = mode === "resync";
    const values = mode === "poll";
    const refreshAll = state.valuesStale;

    const retained = (topic: string, payload: string) => {
      const prev = state.retained.get(topic);
      if (prev === undefined) {
        state.retained.set(topic, { payload, at: now, seen });
      } else {
        prev.seen = seen;
        if (!force && prev.payload === payload) return;
        prev.payload = payload;
        prev.at = now;
      }
      sink.publish(topic, payload, 1, true);
    };
    const value = (topic: string, payload: string) => {
      const prev = state.values.get(topic);
      if (prev === undefined) {
        state.values.set(topic, { payload, at: now, seen });
      } else {
        prev.seen = seen;
        if (!refreshAll && prev.payload === payload && now - prev.at < refreshMs) return;
        prev.payload = payload;
        prev.at = now;
      }
      sink.publish(topic, payload, 0, false);
    };

    for (const device of snapshot.devices) {
      if (!guard.ok(id, "device id", device.id)) continue;
      if (values) {
        if (device.state !== "") value(topics.deviceState(id, device.id), device.state);
        value(topics.deviceAlarm(id, device.id), alarmPayload(device.alarm));
      }
      for (const outlet of device.outlets) {
        if (outlet.state !== "unknown")
          retained(topics.outletState(id, device.id, outlet.index), outlet.state);
        retained(topics.outletLabel(id, device.id, outlet.index), outlet.displayName);
        if (!values) continue;
        for (const m of outlet.measurements) {
          if (m.value !== null && guard.ok(id, "measurement type", m.type)) {
            value(topics.outletMeasurement(id, device.id, outlet.index, m.type), String(m.value));
          }
        }
      }
      if (!values) continue;
      for (const entity of device.entities) {
        if (!guard.ok(id, "entity key", entity.key)) continue;
        for (const m of entity.measurements) {
          if (m.value !== null && guard.ok(id, "measurement type", m.type)) {
            value(topics.entityMeasurement(id, device.id, entity.key, m.type), String(m.value));
          }
        }
      }
    }
    if (values) {
      for (const group of snapshot.groups) {
        if (!guard.ok(id, "group key", group.key)) continue;
        for (const m of group.measurements) {
          if (m.sum === null && m.avg === null && m.min === null && m.max === null) continue;
          if (!guard.ok(id, "group measurement key", m.key)) continue;
          const payload = JSON.stringify({ sum: m.sum, avg: m.avg, min: m.min, max: m.max });
          value(topics.groupMeasurement(id, group.key, m.key), payload);
        }
      }
    }

    for (const [topic, sent] of state.retained) {
      if (sent.seen === seen) continue;
      state.retained.delete(topic);
      sink.publish(topic, "", 1, true);
    }
    if (values) {
      for (const [topic, sent] of state.values) if (sent.seen !== seen) state.values.delete(topic);
      state.valuesStale = false;
    }
  }
}

/** The alarm state as reported; `none` when clear. */
function alarmPayload(alarm: Alarm): string {
  return alarm.state === "" ? "none" : alarm.state;
}
