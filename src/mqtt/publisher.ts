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
 * - Loads against ratings, the active alarms and alarm events come after each walk, from the
 *   snapshot's load report (src/mqtt/alarms.ts).
 *
 * Per instance, two {@link Track}s (retained and value topics) remember each topic's last payload
 * and send time in walk order, so a poll of an unchanged shape builds no topic names; publishes are
 * not awaited (QoS 0 for values, QoS 1 for retained topics).
 *
 * Bulk work is flow-controlled: Home Assistant discovery (177 configs for a 24-outlet PDU) and
 * resyncs after a connect are queued per instance and sent only while the connection is not
 * congested (not too many QoS 1 messages waiting for the broker's acknowledgement), so the start of
 * a large fleet (177,000 configs at 1000 PDUs) never buffers faster than the broker takes them.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { TrapBusEvent } from "../bus.js";
import type { InstanceConfig } from "../config/schema.js";
import { ENERGY_LIFETIME, kwhText, NO_ENERGY, type EnergyReader } from "../energy-reader.js";
import { PUBLISHED_SETTINGS } from "../control/settings.js";
import type { Logger } from "../log.js";
import type { Alarm, Device, Group, LoadReport, Measurement, Outlet, Snapshot } from "../pdu/model.js";
import { publishedView } from "../pdu/overrides.js";
import type { SnapshotStore, StoreEvent } from "../poller/store.js";
import { AlarmTopics } from "./alarms.js";
import { configDigest } from "./ghost-cleanup.js";
import { buildDiscovery, discoveryShape, discoverySignature, type DiscoveryOptions } from "./discovery.js";
import type { TopicIdGuard, TopicKey, Topics } from "./topics.js";
import { NO_SLOT, Track, type Slot, type TopicNames } from "./published-state.js";
import type { Sink } from "./types.js";

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
  /** Where a snapshot whose messages cannot be built is reported (rate-limited). */
  readonly logger?: Logger;
  /** Called after an instance's discovery configs were (re)published from a polled snapshot. */
  readonly onDiscovery?: (instanceId: string) => void;
  /** Whether an instance is published here (checked when its queued work runs); default all. */
  readonly owns?: (instanceId: string) => boolean;
  /** The lifetime energy counters (retained `…/measurements/energyLifetime`); default none. */
  readonly energy?: EnergyReader;
}

/** At most one error line per this period about snapshots that could not be published. */
const FAILURE_LOG_MS = 60_000;

/**
 * How the tracks of instance `id` name topics: a measurement type or group measurement key that
 * cannot be a topic level is refused (device ids, entity and group keys are checked by the walk).
 */
function topicNames(topics: Topics, guard: TopicIdGuard, id: string): TopicNames {
  return {
    accepts: (key) => {
      switch (key.kind) {
        case "outletMeasurement":
        case "entityMeasurement":
          return guard.ok(id, "measurement type", key.type);
        case "groupMeasurement":
          return guard.ok(id, "group measurement key", key.key);
        default:
          return true;
      }
    },
    topic: (key) => topics.topic(id, key),
  };
}

interface InstanceState {
  /** Retained topics (outlet state and label); cleared with an empty payload when they disappear. */
  readonly retained: Track;
  /** Value topics (measurements, device state and alarm); forgotten when they disappear. */
  readonly values: Track;
  /** Last `P/<instance>/status` payload published. */
  status: "online" | "offline" | null;
  /** Publish every value on the next poll (after a reconnect, an outage, a Home Assistant restart). */
  valuesStale: boolean;
  /** Queued for a resync (status, discovery and retained topics), not only for discovery. */
  resyncDue: boolean;
  /**
   * A poll's retained topics were left for the queue: the connection was congested, and a first poll
   * has about six per outlet (states, labels, settings) that would otherwise wait in its outbox.
   */
  retainedDue: boolean;
  /** Polls since the discovery shape was last compared. */
  quietPolls: number;
  /**
   * Until when (epoch ms) no value topic is due for its periodic refresh, as of the last poll's walk;
   * 0 before one and while one is running (a walk that threw leaves it so).
   */
  refreshAt: number;
  /** The discovery shape was compared since the content last changed. */
  shapeChecked: boolean;
  /**
   * Discovery config topics published (and not cleared since), NUL-separated (NUL cannot be in a
   * topic) and deflated, or null before the first. Only read when discovery changes, and deflated
   * they take a small part of their plain size (docs/heap-breakdown.md).
   */
  discovery: Buffer | null;
  signature: string | null;
  /**
   * Taken over from another replica ({@link Publisher.adopt}) and not polled successfully since:
   * nothing of it is published from an older snapshot (the first poll publishes it whole).
   */
  adopted: boolean;
  /** Its discovery waits for the broker's retained configs to be read ({@link Publisher.retainedRead}). */
  awaitingRead: boolean;
  /**
   * The retained configs read (topic → payload digest): its next discovery publishes only configs
   * missing or different from these and clears those it does not produce. Null: none known.
   */
  retainedConfigs: ReadonlyMap<string, string> | null;
}

/**
 * `poll`: retained and value topics; `values`: a poll's value topics alone (its retained ones are
 * queued); `latch`: retained topics that changed; `resync`: every retained topic.
 */
type WalkMode = "poll" | "values" | "latch" | "resync";

/** Polls without any change of topics between two checks of an instance's discovery shape. */
export const DISCOVERY_RECHECK_POLLS = 6;

/** Queued instances handled per event loop turn at most. */
const QUEUE_BATCH = 10;

export class Publisher {
  readonly #options: PublisherOptions;
  readonly #now: () => number;
  readonly #states = new Map<string, InstanceState>();
  readonly #actions: ReadonlyMap<string, boolean>;
  #lastDiscoveryUtc: number | null = null;
  #failed = 0;
  #failureLoggedAt = -Infinity;
  /** Discovery config topics published retained, per instance (for the metrics). */
  readonly #discoveryConfigs = new Map<string, number>();
  /** Instances waiting for discovery or a resync, in arrival order. */
  readonly #queue = new Set<string>();
  /** A turn of {@link #pump} is scheduled or waits for the connection to uncongest. */
  #pumping = false;
  /** What the walk under way publishes, and what it found. */
  readonly #publishing: WalkPublishing;
  /** The walk's key objects, filled in place before each visit. */
  readonly #keys: WalkKeys = { ...walkKeys(), ...lifetimeKeys() };
  /** Load and alarm topics and alarm events (src/mqtt/alarms.ts). */
  readonly #alarms: AlarmTopics;

  constructor(options: PublisherOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#publishing = new WalkPublishing(options.sink, options.refreshMs);
    this.#alarms = new AlarmTopics(options.sink, options.topics, options.guard);
    this.#actions = new Map(options.instances.map((i) => [i.id, i.ActionsEnabled]));
  }

  get lastDiscoveryUtc(): number | null {
    return this.#lastDiscoveryUtc;
  }

  /** Snapshots whose messages could not be built (each logged; never thrown into the store). */
  get failed(): number {
    return this.#failed;
  }

  /** Discovery config topics currently published retained, over every instance. */
  get discoveryConfigs(): number {
    let n = 0;
    for (const count of this.#discoveryConfigs.values()) n += count;
    return n;
  }

  /** The discovery config topics last published for the instance, or null before its first. */
  discoveryTopics(instanceId: string): ReadonlySet<string> | null {
    const packed = this.#states.get(instanceId)?.discovery ?? null;
    if (packed === null) return null;
    return new Set(inflateRawSync(packed).toString("utf8").split("\u0000"));
  }

  /**
   * Store listener. Never throws: a snapshot whose messages cannot be built is logged and counted,
   * and the store, the poller and every other instance go on.
   */
  handle(event: StoreEvent): void {
    try {
      this.#handle(event);
    } catch (error) {
      this.#failure(event.instanceId, error);
    }
  }

  #failure(instanceId: string, error: unknown): void {
    this.#failed++;
    const now = this.#now();
    if (now - this.#failureLoggedAt < FAILURE_LOG_MS) return;
    this.#failureLoggedAt = now;
    this.#options.logger?.error(
      {
        instance: instanceId,
        err: error instanceof Error ? error.message : String(error),
        failed: this.#failed,
      },
      "MQTT messages of a snapshot could not be built; skipped",
    );
  }

  #handle(event: StoreEvent): void {
    if (!this.#options.sink.connected) return;
    const state = this.#state(event.instanceId);
    if (event.kind === "failure") {
      this.#setStatus(event.instanceId, state, "offline", false);
      state.valuesStale = true;
      return;
    }
    // Hidden things (overrides) have no topics and no discovery: walk what is published.
    const snapshot = publishedView(event.snapshot);
    if (!event.fromPoll) {
      this.#walk(event.instanceId, state, snapshot, "latch");
      this.#alarms.publish(event.instanceId, event.load, event.alarmChanges, false);
      return;
    }
    this.#setStatus(event.instanceId, state, "online", false);
    state.adopted = false;
    // The same content as the last poll's (the PDU answered exactly as before): the walk would send
    // nothing unless values are stale or a refresh is due, so it is skipped; the discovery shape of
    // this content still gets its one check below.
    const skip = event.unchanged && !state.valuesStale && this.#now() < state.refreshAt;
    if (!skip) {
      state.shapeChecked = false;
      state.refreshAt = 0;
      // While the connection is congested, the retained topics wait their turn with the bulk work
      // (their latest state is walked then); the values go now.
      const defer = this.#options.sink.congested;
      const reshaped = this.#walk(event.instanceId, state, snapshot, defer ? "values" : "poll");
      if (reshaped) state.quietPolls = DISCOVERY_RECHECK_POLLS;
      if (defer) {
        state.retainedDue = true;
        this.#enqueue(event.instanceId);
      }
      this.#alarms.publish(event.instanceId, event.load, event.alarmChanges, false);
    }
    // Comparing the discovery shape costs about as much as the rest of the walk, and it almost never
    // changes: check it when topics came or went or a retained payload (label, state) changed, and
    // otherwise every few polls, which is how soon a changed name, unit or firmware version shows.
    if (!state.shapeChecked && ++state.quietPolls >= DISCOVERY_RECHECK_POLLS) {
      state.quietPolls = 0;
      state.shapeChecked = true;
      if (this.#discoveryChanged(event.instanceId, state, snapshot, event.load))
        this.#enqueue(event.instanceId);
    }
  }

  /**
   * After a (re)connect, or when Home Assistant comes online: every instance's status, discovery
   * and retained states again, and every value with its next poll. Queued like discovery: a few
   * instances per event loop turn, while the connection keeps up. `ids`: the instances to resync
   * (those this process owns); default every configured one.
   */
  resync(ids: Iterable<string> = this.#options.store.ids()): void {
    for (const id of ids) {
      this.#state(id).resyncDue = true;
      this.#enqueue(id);
    }
  }

  /**
   * The instance was taken over (among several replicas): what was known of it is forgotten, so
   * nothing is published from an older snapshot; its first successful poll publishes its status,
   * retained topics and values, and its discovery waits until {@link retainedRead} says what the
   * broker retains, so that configs identical to the retained ones are not written again.
   */
  adopt(id: string): void {
    this.#queue.delete(id);
    this.#states.delete(id);
    this.#discoveryConfigs.delete(id);
    const state = this.#state(id);
    state.adopted = true;
    state.awaitingRead = this.#options.discovery !== null;
  }

  /**
   * The retained discovery configs of an adopted instance were read (topic → payload digest; null:
   * they could not be, and its discovery is published whole). Its discovery follows now if it has
   * been polled since, else with that poll.
   */
  retainedRead(id: string, configs: ReadonlyMap<string, string> | null): void {
    const state = this.#states.get(id);
    if (state === undefined || !state.awaitingRead) return;
    state.awaitingRead = false;
    state.retainedConfigs = configs;
    if (!state.adopted) this.#enqueue(id);
  }

  /** A trap's event on the instance's events topic (./alarms.ts), when the topic can be built for it. */
  trap(event: TrapBusEvent): void {
    this.#alarms.trap(event.instanceId, event.at, event.event);
  }

  /**
   * One instance's status, discovery and retained topics again (queued like a resync), and its
   * values with its next poll: after a live change of its overrides, which may rename things
   * (discovery names) or hide them (configs cleared).
   */
  refresh(id: string): void {
    if (!this.#options.sink.connected) return;
    this.#state(id).resyncDue = true;
    this.#enqueue(id);
  }

  #enqueue(id: string): void {
    this.#queue.add(id);
    if (this.#pumping) return;
    this.#pumping = true;
    setImmediate(this.#pump);
  }

  readonly #pump = (): void => {
    const sink = this.#options.sink;
    let done = 0;
    for (const id of this.#queue) {
      if (!sink.connected) break;
      if (sink.congested) {
        sink.onceUncongested(this.#pump);
        return;
      }
      if (done++ === QUEUE_BATCH) {
        setImmediate(this.#pump);
        return;
      }
      this.#queue.delete(id);
      try {
        this.#runQueued(id);
      } catch (error) {
        this.#failure(id, error);
      }
    }
    // Disconnected: the next connect resyncs every instance anyway.
    this.#queue.clear();
    this.#pumping = false;
  };

  #runQueued(id: string): void {
    if (this.#options.owns?.(id) === false) return;
    const status = this.#options.store.get(id);
    if (status === undefined) return;
    const state = this.#state(id);
    // Taken over and not polled yet: its first poll publishes everything.
    if (state.adopted) return;
    const snapshot = status.snapshot === null ? null : publishedView(status.snapshot);
    if (state.resyncDue) {
      state.resyncDue = false;
      state.retainedDue = false;
      const online = snapshot !== null && status.consecutiveFailures === 0;
      this.#setStatus(id, state, online ? "online" : "offline", true);
      state.valuesStale = true;
      if (snapshot === null) return;
      this.#discover(id, state, snapshot, status.load, true);
      this.#walk(id, state, snapshot, "resync");
      this.#alarms.publish(id, status.load, [], true);
      return;
    }
    if (snapshot === null) return;
    if (state.retainedDue) {
      state.retainedDue = false;
      if (this.#walk(id, state, snapshot, "latch")) {
        state.quietPolls = DISCOVERY_RECHECK_POLLS;
        state.shapeChecked = false;
      }
    }
    // New or changed entities subscribe only after receiving their config: give them every value
    // with the next poll rather than after a whole refresh period.
    if (this.#discover(id, state, snapshot, status.load, false)) state.valuesStale = true;
  }

  #state(id: string): InstanceState {
    let state = this.#states.get(id);
    if (state === undefined) {
      const topics = topicNames(this.#options.topics, this.#options.guard, id);
      state = {
        retained: new Track(topics),
        values: new Track(topics),
        status: null,
        valuesStale: true,
        resyncDue: false,
        retainedDue: false,
        quietPolls: 0,
        refreshAt: 0,
        shapeChecked: false,
        discovery: null,
        signature: null,
        adopted: false,
        awaitingRead: false,
        retainedConfigs: null,
      };
      this.#states.set(id, state);
    }
    return state;
  }

  #setStatus(id: string, state: InstanceState, status: "online" | "offline", force: boolean): void {
    if (!force && state.status === status) return;
    if (status === "online" && state.status !== "online") state.valuesStale = true;
    state.status = status;
    this.#options.sink.publish(this.#options.topics.instanceStatus(id), status, 1, true);
  }

  /** Whether the instance's discovery differs from what was published last (false: discovery off). */
  /** What discovery announces of a snapshot (lifetime energy sensors where the counters are kept). */
  #shape(id: string, snapshot: Snapshot, load: LoadReport) {
    return discoveryShape(id, snapshot, this.#options.guard, load, this.#options.energy !== undefined);
  }

  #discoveryChanged(id: string, state: InstanceState, snapshot: Snapshot, load: LoadReport): boolean {
    if (this.#options.discovery === null) return false;
    return discoverySignature(this.#shape(id, snapshot, load)) !== state.signature;
  }

  /**
   * Publishes the instance's discovery when its shape changed (always when forced) and clears the
   * configs that are gone; true when it published. Only config topics are kept, not payloads (they
   * would be the biggest thing in memory at 1000 PDUs), so a change republishes the whole instance.
   */
  #discover(id: string, state: InstanceState, snapshot: Snapshot, load: LoadReport, force: boolean): boolean {
    const options = this.#options.discovery;
    if (options === null) return false;
    // Taken over: first what the broker retains ({@link retainedRead}).
    if (state.awaitingRead) return false;
    const shape = this.#shape(id, snapshot, load);
    const signature = discoverySignature(shape);
    if (signature === state.signature && !force) return false;
    const configs = buildDiscovery(options, id, this.#actions.get(id) ?? false, shape);
    const sink = this.#options.sink;
    const retained = state.retainedConfigs;
    if (retained !== null) {
      state.retainedConfigs = null;
      this.#reconcile(id, configs, retained);
    } else {
      for (const [topic, payload] of configs) sink.publish(topic, payload, 1, true);
    }
    if (state.discovery !== null) {
      for (const topic of inflateRawSync(state.discovery).toString("utf8").split("\u0000")) {
        if (!configs.has(topic)) sink.publish(topic, "", 1, true);
      }
    }
    // A copy of its own, exactly its size: zlib's result is a view of its 16 KiB output chunk, and a
    // small Buffer.from() is a slice of Node's shared 8 KiB pool, which this one then keeps alive.
    const deflated = deflateRawSync(Buffer.from([...configs.keys()].join("\u0000"), "utf8"));
    state.discovery = Buffer.allocUnsafeSlow(deflated.length);
    deflated.copy(state.discovery);
    state.signature = signature;
    this.#discoveryConfigs.set(id, configs.size);
    this.#lastDiscoveryUtc = this.#now();
    this.#options.onDiscovery?.(id);
    return true;
  }

  /**
   * An adopted instance's discovery against the configs the broker retains: publishes the configs
   * missing or different, clears the retained ones it does not produce (ghosts of this instance,
   * under its own node id), and leaves identical ones alone, so a handover writes no config.
   */
  #reconcile(id: string, configs: ReadonlyMap<string, string>, retained: ReadonlyMap<string, string>): void {
    const sink = this.#options.sink;
    let published = 0;
    for (const [topic, payload] of configs) {
      if (retained.get(topic) === configDigest(payload)) continue;
      sink.publish(topic, payload, 1, true);
      published++;
    }
    let cleared = 0;
    for (const topic of retained.keys()) {
      if (configs.has(topic)) continue;
      sink.publish(topic, "", 1, true);
      cleared++;
    }
    const log = this.#options.logger;
    if (cleared > 0) {
      log?.info(
        { instance: id, cleared },
        "cleared retained discovery configs of things that no longer exist",
      );
    }
    log?.debug(
      { instance: id, published, cleared, unchanged: configs.size - published },
      "discovery of an instance taken over checked against the retained configs",
    );
  }

  /**
   * Publishes what is due for one snapshot: one function per thing walked, each visiting its topics
   * in the instance's tracks in the same order every poll (./published-state.ts). `poll`: retained
   * and value topics; `values`: value topics alone; `latch` (only an outlet state changed after a
   * command): retained topics that changed; `resync`: every retained topic. True when a topic
   * appeared or went away or a retained payload changed.
   */
  #walk(id: string, state: InstanceState, snapshot: Snapshot, mode: WalkMode): boolean {
    const withValues = mode === "poll" || mode === "values";
    const withRetained = mode !== "values";
    const publishing = this.#publishing;
    publishing.start(this.#now(), mode === "resync", state.valuesStale);
    if (withRetained) state.retained.begin();
    if (withValues) state.values.begin();
    for (const device of snapshot.devices) {
      if (!this.#options.guard.ok(id, "device id", device.id)) continue;
      if (withValues) this.#walkDevice(state.values, device);
      for (const outlet of device.outlets) {
        if (withRetained) this.#walkOutletRetained(state.retained, device.id, outlet);
        if (withValues) this.#walkOutletValues(state.values, device.id, outlet);
      }
      if (withRetained) this.#walkLifetimes(id, state.retained, device);
      if (withValues) this.#walkEntities(id, state.values, device);
    }
    if (withValues) this.#walkGroups(id, state.values, snapshot.groups);
    if (withRetained) this.#endRetained(state.retained);
    if (withValues) {
      if (state.values.end().length > 0) publishing.reshaped = true;
      state.valuesStale = false;
      state.refreshAt = publishing.oldestKept + this.#options.refreshMs;
    }
    return publishing.reshaped;
  }

  /** A device's own value topics: its state (when it reports one) and its alarm. */
  #walkDevice(values: Track, device: Device): void {
    const keys = this.#keys;
    if (device.state !== "") {
      keys.deviceState.deviceId = device.id;
      this.#publishing.text(values, values.visit(keys.deviceState), device.state);
    }
    keys.deviceAlarm.deviceId = device.id;
    this.#publishing.text(values, values.visit(keys.deviceAlarm), alarmPayload(device.alarm));
  }

  /** An outlet's retained topics: its state, label and settings. */
  #walkOutletRetained(retained: Track, deviceId: string, outlet: Outlet): void {
    const keys = this.#keys;
    const publishing = this.#publishing;
    if (outlet.state !== "unknown") {
      keys.outletState.deviceId = deviceId;
      keys.outletState.index = outlet.index;
      publishing.retained(retained, retained.visit(keys.outletState), outlet.state);
    }
    keys.outletLabel.deviceId = deviceId;
    keys.outletLabel.index = outlet.index;
    publishing.retained(retained, retained.visit(keys.outletLabel), outlet.displayName);
    const setting = keys.outletSetting;
    setting.deviceId = deviceId;
    setting.index = outlet.index;
    for (const row of PUBLISHED_SETTINGS) {
      const current = row.current(outlet);
      if (current === null) continue;
      setting.setting = row.name;
      publishing.retained(retained, retained.visit(setting), current);
    }
  }

  /**
   * A device's lifetime energy counters (retained, kWh): one per outlet and entity with a counter.
   * Until the instance's counters are known (its bucket's checkpoint read here), the topics of the
   * things with an energy reading are kept as they are.
   */
  #walkLifetimes(id: string, retained: Track, device: Device): void {
    const energy = this.#options.energy ?? NO_ENERGY;
    const ready = energy.ready(id);
    const publishing = this.#publishing;
    const outletKey = this.#keys.lifetimeOutlet;
    outletKey.deviceId = device.id;
    for (const outlet of device.outlets) {
      const wh = energy.outletWh(id, device.id, outlet.index);
      if (wh === null && (ready || !hasEnergy(outlet.measurements))) continue;
      outletKey.index = outlet.index;
      const slot = retained.visit(outletKey);
      if (wh !== null) publishing.retainedCounter(retained, slot, kwhText(wh));
    }
    const entityKey = this.#keys.lifetimeEntity;
    entityKey.deviceId = device.id;
    for (const entity of device.entities) {
      const wh = energy.entityWh(id, device.id, entity.key);
      if (wh === null && (ready || !hasEnergy(entity.measurements))) continue;
      if (!this.#options.guard.ok(id, "entity key", entity.key)) continue;
      entityKey.entityKey = entity.key;
      const slot = retained.visit(entityKey);
      if (wh !== null) publishing.retainedCounter(retained, slot, kwhText(wh));
    }
  }

  /** An outlet's measurements (those with a number). */
  #walkOutletValues(values: Track, deviceId: string, outlet: Outlet): void {
    const key = this.#keys.outletMeasurement;
    key.deviceId = deviceId;
    key.index = outlet.index;
    for (const measurement of outlet.measurements) {
      // The lifetime counter's topic is the bridge's own (#walkLifetimes), whatever a PDU calls its readings.
      if (measurement.value === null || measurement.type === ENERGY_LIFETIME) continue;
      key.type = measurement.type;
      this.#publishing.number(values, values.visit(key), measurement.value);
    }
  }

  /** A device's entities' measurements (those with a number); an unsafe entity key has no topics. */
  #walkEntities(id: string, values: Track, device: Device): void {
    const key = this.#keys.entityMeasurement;
    key.deviceId = device.id;
    for (const entity of device.entities) {
      if (!this.#options.guard.ok(id, "entity key", entity.key)) continue;
      key.entityKey = entity.key;
      for (const measurement of entity.measurements) {
        if (measurement.value === null || measurement.type === ENERGY_LIFETIME) continue;
        key.type = measurement.type;
        this.#publishing.number(values, values.visit(key), measurement.value);
      }
    }
  }

  /** The OneView groups' rollups (JSON of sum, avg, min and max; all null: none). */
  #walkGroups(id: string, values: Track, groups: readonly Group[]): void {
    const key = this.#keys.groupMeasurement;
    for (const group of groups) {
      if (!this.#options.guard.ok(id, "group key", group.key)) continue;
      key.groupKey = group.key;
      for (const rollup of group.measurements) {
        const { sum, avg, min, max } = rollup;
        if (sum === null && avg === null && min === null && max === null) continue;
        key.key = rollup.key;
        this.#publishing.text(values, values.visit(key), JSON.stringify({ sum, avg, min, max }));
      }
    }
  }

  /** Ends a walk of the retained topics: the ones not visited are cleared (empty retained payload). */
  #endRetained(retained: Track): void {
    for (const topic of retained.end()) {
      this.#options.sink.publish(topic, "", 1, true);
      this.#publishing.reshaped = true;
    }
  }
}

/**
 * One key object per kind of topic, which the walk fills in place before each visit (the track
 * copies the fields it keeps), so a poll makes no key objects.
 */
function walkKeys() {
  return {
    deviceState: { kind: "deviceState", deviceId: "" },
    deviceAlarm: { kind: "deviceAlarm", deviceId: "" },
    outletState: { kind: "outletState", deviceId: "", index: 0 },
    outletLabel: { kind: "outletLabel", deviceId: "", index: 0 },
    outletSetting: { kind: "outletSetting", deviceId: "", index: 0, setting: PUBLISHED_SETTINGS[0]!.name },
    outletMeasurement: { kind: "outletMeasurement", deviceId: "", index: 0, type: "" },
    entityMeasurement: { kind: "entityMeasurement", deviceId: "", entityKey: "", type: "" },
    groupMeasurement: { kind: "groupMeasurement", groupKey: "", key: "" },
  } satisfies { [K in TopicKey["kind"]]: Mutable<Extract<TopicKey, { kind: K }>> };
}

/** The keys of the lifetime counters' topics: measurement topics of the type `energyLifetime`. */
function lifetimeKeys() {
  return {
    lifetimeOutlet: { kind: "outletMeasurement", deviceId: "", index: 0, type: ENERGY_LIFETIME },
    lifetimeEntity: { kind: "entityMeasurement", deviceId: "", entityKey: "", type: ENERGY_LIFETIME },
  } satisfies Record<string, Mutable<TopicKey>>;
}

/** Whether the measurements hold an energy reading (a number): the thing has a lifetime counter. */
function hasEnergy(measurements: readonly Measurement[]): boolean {
  for (const m of measurements) if (m.type === "energy") return m.value !== null;
  return false;
}

type WalkKeys = ReturnType<typeof walkKeys> & ReturnType<typeof lifetimeKeys>;

type Mutable<T> = { -readonly [P in keyof T]: T[P] };

/**
 * Whether a topic is published on its slot, by the rules at the top of this file, and what the walk
 * under way found. One per publisher, set at the start of each walk (walks never overlap: they run
 * synchronously), so a poll makes no closures.
 */
class WalkPublishing {
  /** The walk's time (epoch ms). */
  #now = 0;
  /** Every retained topic again (a resync). */
  #republishRetained = false;
  /** Every value again (after a reconnect, an outage, new discovery). */
  #republishValues = false;
  /** A topic appeared or went away, or a retained payload changed. */
  reshaped = false;
  /** When the least recently sent value topic left unsent by this walk was sent (epoch ms). */
  oldestKept = 0;
  readonly #sink: Sink;
  readonly #refreshMs: number;

  constructor(sink: Sink, refreshMs: number) {
    this.#sink = sink;
    this.#refreshMs = refreshMs;
  }

  start(now: number, republishRetained: boolean, republishValues: boolean): void {
    this.#now = now;
    this.#republishRetained = republishRetained;
    this.#republishValues = republishValues;
    this.reshaped = false;
    this.oldestKept = now;
  }

  /** A retained topic (outlet state, label, settings): published when its payload changed. */
  retained(track: Track, slot: Slot, payload: string): void {
    if (slot === NO_SLOT) return;
    if (track.lastText(slot) !== payload) {
      this.reshaped = true;
    } else if (!this.#republishRetained) return;
    track.recordText(slot, this.#now, payload);
    this.#sink.publish(track.topic(slot), payload, 1, true);
  }

  /**
   * A retained counter (a lifetime energy counter): published when it changed, like
   * {@link retained}, but a count that moved is no change of shape (it moves every poll). At QoS 0:
   * it moves every poll on every outlet that draws power, and QoS 1 would hold each message until
   * its acknowledgement, a cost per outlet per poll as large as all the measurements' publishing. A
   * QoS 0 message is lost only with its connection, and every connect republishes the retained
   * topics (a resync); a subscriber that reconnects gets the count from the broker.
   */
  retainedCounter(track: Track, slot: Slot, payload: string): void {
    if (slot === NO_SLOT) return;
    if (!track.isPublished(slot)) this.reshaped = true;
    else if (track.lastText(slot) === payload && !this.#republishRetained) return;
    track.recordText(slot, this.#now, payload);
    this.#sink.publish(track.topic(slot), payload, 0, true);
  }

  /** A text value (device state and alarm, group rollups). */
  text(track: Track, slot: Slot, payload: string): void {
    if (slot === NO_SLOT) return;
    if (!track.isPublished(slot)) this.reshaped = true;
    else if (track.lastText(slot) === payload && this.#kept(track, slot)) return;
    track.recordText(slot, this.#now, payload);
    this.#sink.publish(track.topic(slot), payload, 0, false);
  }

  /** A measurement's number: formatted only when sent. */
  number(track: Track, slot: Slot, value: number): void {
    if (slot === NO_SLOT) return;
    if (!track.isPublished(slot)) this.reshaped = true;
    else if (track.lastNumber(slot) === value && this.#kept(track, slot)) return;
    track.recordNumber(slot, this.#now, value);
    this.#sink.publish(track.topic(slot), String(value), 0, false);
  }

  /** Whether an unchanged value is left unsent (its refresh is not due); notes when it was sent. */
  #kept(track: Track, slot: Slot): boolean {
    if (this.#republishValues) return false;
    const sentAt = track.lastPublishedAt(slot);
    if (this.#now - sentAt >= this.#refreshMs) return false;
    if (sentAt < this.oldestKept) this.oldestKept = sentAt;
    return true;
  }
}

/** The alarm state as reported; `none` when clear. */
function alarmPayload(alarm: Alarm): string {
  return alarm.state === "" ? "none" : alarm.state;
}
