/**
 * Assets and feeds over MQTT (docs/assets.md, "MQTT and Home Assistant"), driven by the bus's
 * `assets` and `alarms` events through the MQTT part:
 *
 * - `P/$assets/<asset>/state` (`on`, `off`, `partial`, `unknown`), `…/power` (W), `…/energy`
 *   (kWh) and `…/redundancy` (`ok`, `single`, `lost`): retained (power and energy at QoS 0, the
 *   others at QoS 1), sent when the payload changes; a figure that is not known is an empty
 *   retained payload (the topic cleared), never 0. The state and redundancy go at once; the
 *   figures at most about once per poll interval of the asset's cords (see {@link FIGURE_SPACING}),
 *   at once with a state or redundancy that moved or when one becomes known or not known, and a
 *   figure held back goes with the next publish or on a timer, about one interval after it moved
 *   at the latest;
 * - the alarms about several PDUs as an instance's are (./alarms.ts): `P/$assets/alarms` and
 *   `P/$feeds/alarms` (retained lists), `P/$assets/events` and `P/$feeds/events`;
 * - Home Assistant (when discovery is on): one device per asset, node id `<P>-assets` (no instance's
 *   node id can be it: theirs have an `_`), with its power and energy sensors, its state, a
 *   `problem` binary sensor for its redundancy, and, when control is on for every instance it has
 *   a cord on, a switch (a protected asset: none) and a reboot button on `P/$assets/<asset>/set`,
 *   which the control side serves.
 *
 * An asset removed by a live change of the configuration has its topics and configs cleared. Among
 * several replicas each asset is published by one replica (`AssetsView.publishes`) and the alarm
 * lists by one (`publishesFleet`).
 */
import { createHash } from "node:crypto";
import { ASSETS_SCOPE, FEEDS_SCOPE, type FleetAlarm } from "../assets/alarms.js";
import type { AssetState } from "../assets/state.js";
import type { AssetDef } from "../assets/types.js";
import type { AssetsView } from "../assets/view.js";
import type { AssetsEvent } from "../bus.js";
import { EMPTY_REPORT } from "../pdu/load.js";
import type { AlarmChange } from "../pdu/model.js";
import { AlarmTopics } from "./alarms.js";
import { idPart, type DiscoveryOptions } from "./discovery.js";
import { ASSET_LEVELS, type AssetLevel, type TopicIdGuard, type Topics } from "./topics.js";
import type { Sink } from "./types.js";

export interface AssetTopicsOptions {
  readonly sink: Sink;
  readonly topics: Topics;
  readonly guard: TopicIdGuard;
  readonly view: AssetsView;
  /** Home Assistant discovery, or null when it is off. */
  readonly discovery: Omit<DiscoveryOptions, "expireAfter"> | null;
  /** Whether control is on for an instance (`ActionsEnabled`). */
  readonly actionsEnabled: (instanceId: string) => boolean;
  readonly now?: () => number;
}

/**
 * What was last published for one asset. The figures are kept as the numbers their payloads were
 * made of, in place (a payload string kept per poll would outlive the young generation).
 */
interface Published {
  readonly id: string;
  /** The book's version of the state last published (src/assets/book.ts). */
  version: number;
  state: string;
  redundancy: string;
  /** The figures as rounded for their payloads; NaN: the topic cleared (not known). */
  power: number;
  energy: number;
  /** When the figures were last published (ms; -Infinity: never). */
  figuresAt: number;
  /** Whether a figure is held back: it waits in the bucket {@link bucket} (see `AssetTopics.#held`). */
  held: boolean;
  /** While a figure is held back: when it goes out if nothing publishes it before (ms). */
  dueAt: number;
  /** While a figure is held back: the sweep it is due at (`dueAt` / {@link SWEEP_MS}, rounded up). */
  bucket: number;
  /**
   * A digest of the discovery configs last published (topics and payloads), or null: none. Not the
   * configs: their JSON for every asset of a large fleet would stay in the heap for nothing.
   */
  configs: string | null;
  /** What the configs were built from: the asset's definition and whether its control is on. */
  configsDef: AssetDef | null;
  actions: boolean;
  /**
   * The definition last published, the instance of its first cord and the book's state of the
   * asset (written in place by the book): the model's and the book's until a live change, which
   * comes as a `reconfigured` event and reads both again ({@link AssetTopics.changed}).
   */
  def: AssetDef;
  first: string | undefined;
  source: AssetState;
  /** The asset's power and energy topics, built once: they go out at about every poll. */
  readonly powerTopic: string;
  readonly energyTopic: string;
}

/**
 * The levels whose payload moves with every reading go at QoS 0: QoS 1 would hold every one of them
 * until its acknowledgement, and a QoS 0 message is lost only with its connection, after which
 * every connect publishes them all again (a subscriber that reconnects gets them from the broker).
 * The others change rarely and go at QoS 1.
 */
const MOVING_LEVELS: ReadonlySet<AssetLevel> = new Set(["power", "energy"]);
const qosOf = (level: AssetLevel): 0 | 1 => (MOVING_LEVELS.has(level) ? 0 : 1);

/**
 * A figure that moved alone (power or energy, the state and redundancy as they were) is published
 * when the asset's figures were last published at least this share of the shortest poll interval
 * of its cords' instances ago (`AssetsView.pollIntervalMs`), else held back. Below one: a poll that
 * comes a little early is not held back, and an asset with cords on two PDUs polled at the same
 * interval publishes its figures once per interval, at whichever of their polls comes first after
 * that. A figure held back goes with the next publish of the asset, or, when nothing moves it
 * again, one poll interval after it moved (at most {@link SWEEP_MS} later).
 */
export const FIGURE_SPACING = 0.75;

/** The decimals of an asset's power (W) and energy (kWh) payloads. */
const POWER_DIGITS = 2;
const ENERGY_DIGITS = 3;

/** How often the figures held back are looked at while there are some (ms). */
export const SWEEP_MS = 250;

export class AssetTopics {
  readonly #o: AssetTopicsOptions;
  readonly #alarms: AlarmTopics;
  readonly #published = new Map<string, Published>();
  /** The scopes whose alarm list was published. */
  readonly #listed = new Set<string>();
  /**
   * The assets with a figure held back, by the sweep they are due at: a sweep reads only the
   * buckets due, not every asset held. An asset leaves by its `held` flag, and what it left in a
   * bucket is dropped when the bucket comes, within one poll interval: bounded by the assets times
   * the updates an asset has in one interval.
   */
  readonly #held = new Map<number, Published[]>();
  #sweep: NodeJS.Timeout | null = null;
  #closed = false;
  readonly #now: () => number;

  constructor(options: AssetTopicsOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#alarms = new AlarmTopics(options.sink, options.topics, options.guard);
  }

  /**
   * Everything again (after a connect): every asset's topics and configs, and the alarm lists of
   * what is configured (or was listed before: a list emptied by a live change stays published,
   * empty). A configuration without assets or feeds publishes nothing under `$assets`, `$feeds`.
   */
  resync(): void {
    this.#reconcile(true);
    const model = this.#o.view.model;
    if (model.assets.size > 0 || this.#listed.has(ASSETS_SCOPE)) this.alarms(ASSETS_SCOPE, [], true);
    if (model.feeds.size > 0 || this.#listed.has(FEEDS_SCOPE)) this.alarms(FEEDS_SCOPE, [], true);
  }

  /** No more publishing: the timer of the figures held back stopped. */
  close(): void {
    this.#closed = true;
    if (this.#sweep !== null) clearTimeout(this.#sweep);
    this.#sweep = null;
    this.#releaseAll();
  }

  /** What an `assets` event moved. */
  changed(event: AssetsEvent): void {
    if (!this.#o.sink.connected) return;
    if (event.reconfigured) {
      this.#reconcile(false);
      return;
    }
    for (const id of event.assets) {
      const published = this.#published.get(id);
      if (published === undefined) this.#publish(id, false);
      else this.#moved(published);
    }
  }

  /** An `alarms` event of a scope (`$assets`, `$feeds`): its list and one event per change. */
  alarms(scope: string, changes: readonly AlarmChange[], force = false): void {
    const view = this.#o.view;
    if (!this.#o.sink.connected || !view.publishesFleet()) return;
    let list: readonly FleetAlarm[];
    if (scope === ASSETS_SCOPE) list = view.assetAlarms();
    else if (scope === FEEDS_SCOPE) list = view.feedAlarms();
    else return;
    this.#listed.add(scope);
    this.#alarms.publish(scope, { ...EMPTY_REPORT, alarms: list }, changes, force);
  }

  /** Every asset of the model published (when `force`, or when it changed); the ones gone cleared. */
  #reconcile(force: boolean): void {
    const model = this.#o.view.model;
    for (const id of [...this.#published.keys()]) {
      const def = model.assets.get(id);
      if (def === undefined || !this.#o.view.publishes(def)) this.#clear(id);
    }
    for (const id of model.assets.keys()) this.#publish(id, force);
  }

  /**
   * One asset's topics and discovery: what differs from what was last published (all when `force`,
   * or when nothing was yet). Nothing at all when neither the state (its version) nor the
   * definition moved since.
   */
  #publish(id: string, force: boolean): void {
    const view = this.#o.view;
    const def = view.model.assets.get(id);
    const state = view.book.get(id);
    if (def === undefined || state === undefined || !view.publishes(def)) return;
    let published = this.#published.get(id);
    if (published === undefined) {
      published = {
        id,
        version: -1,
        state: "",
        redundancy: "",
        power: NaN,
        energy: NaN,
        figuresAt: -Infinity,
        held: false,
        dueAt: 0,
        bucket: 0,
        configs: null,
        configsDef: null,
        actions: false,
        def,
        first: undefined,
        source: state,
        powerTopic: this.#o.topics.asset(id, "power"),
        energyTopic: this.#o.topics.asset(id, "energy"),
      };
      this.#published.set(id, published);
      force = true;
    }
    published.source = state;
    const version = view.book.version(id);
    if (!force && published.version === version && published.def === def) return;
    published.version = version;
    published.def = def;
    published.first = def.cords[0]?.instance;
    this.#values(def, state, published, force);
    this.#discover(def, published, force);
  }

  /**
   * An asset published before whose state moved (the book moved its version): its definition and
   * state are the ones last published (no live change came since, or {@link changed} would have
   * reconciled every asset), so its discovery stays. Its version is not read: the next reconcile
   * compares its values again.
   */
  #moved(published: Published): void {
    if (!this.#o.view.publishesOn(published.first)) return;
    published.version = -1;
    this.#values(published.def, published.source, published, false);
  }

  /**
   * The asset's retained topics whose payload differs from the last published (all when `force`):
   * the state and redundancy at once, the figures with them or as {@link #figures} decides.
   */
  #values(def: AssetDef, state: AssetState, published: Published, force: boolean): void {
    const { sink, topics } = this.#o;
    const shown = published.state !== state.state || published.redundancy !== state.redundancy;
    if (force || published.state !== state.state) {
      published.state = state.state;
      sink.publish(topics.asset(def.id, "state"), state.state, 1, true);
    }
    this.#figures(def, state, published, force, force || shown);
    if (force || published.redundancy !== state.redundancy) {
      published.redundancy = state.redundancy;
      sink.publish(topics.asset(def.id, "redundancy"), state.redundancy, 1, true);
    }
  }

  /**
   * The asset's power and energy where they differ from the last published (both when `force`):
   * now when `now`, when one becomes known or not known, or when the last were published at least
   * {@link FIGURE_SPACING} of the asset's poll interval ago; else held back (the first held back
   * sets when they go out at the latest: one poll interval after).
   */
  #figures(def: AssetDef, state: AssetState, published: Published, force: boolean, now: boolean): void {
    const power = rounded(state.power, POWER_DIGITS);
    const energy = rounded(state.energy, ENERGY_DIGITS);
    const powerMoved = !sameFigure(published.power, power);
    const energyMoved = !sameFigure(published.energy, energy);
    if (!force && !powerMoved && !energyMoved) {
      published.held = false;
      return;
    }
    const at = this.#now();
    if (!now && !knownMoved(published.power, power) && !knownMoved(published.energy, energy)) {
      const interval = this.#o.view.pollIntervalMs(def);
      if (at < published.figuresAt + FIGURE_SPACING * interval) {
        if (!published.held) this.#hold(published, at + interval);
        return;
      }
    }
    published.held = false;
    published.figuresAt = at;
    const { sink } = this.#o;
    if (force || powerMoved) {
      published.power = power;
      sink.publish(published.powerTopic, figureText(power, POWER_DIGITS), qosOf("power"), true);
    }
    if (force || energyMoved) {
      published.energy = energy;
      sink.publish(published.energyTopic, figureText(energy, ENERGY_DIGITS), qosOf("energy"), true);
    }
  }

  /** Holds the asset's figures back until `dueAt` at the latest. */
  #hold(published: Published, dueAt: number): void {
    const bucket = Math.ceil(dueAt / SWEEP_MS);
    published.held = true;
    published.dueAt = dueAt;
    published.bucket = bucket;
    const list = this.#held.get(bucket);
    if (list === undefined) this.#held.set(bucket, [published]);
    else list.push(published);
    this.#arm();
  }

  /** No figure held back any more. */
  #releaseAll(): void {
    for (const list of this.#held.values()) for (const published of list) published.held = false;
    this.#held.clear();
  }

  /** The timer of the figures held back, when it is not running. */
  #arm(): void {
    if (this.#sweep !== null || this.#closed) return;
    this.#sweep = setTimeout(() => this.#flush(), SWEEP_MS);
    this.#sweep.unref();
  }

  /**
   * The figures held back that are due, published (the rest wait for the next turn). Without a
   * connection none is kept: the next connect publishes everything.
   */
  #flush(): void {
    this.#sweep = null;
    if (!this.#o.sink.connected) {
      this.#releaseAll();
      return;
    }
    const view = this.#o.view;
    const at = this.#now();
    for (const [bucket, list] of this.#held) {
      if (bucket * SWEEP_MS > at) continue;
      this.#held.delete(bucket);
      for (const published of list) {
        // Published since, or held again into a later bucket.
        if (!published.held || published.bucket !== bucket) continue;
        published.held = false;
        const def = view.model.assets.get(published.id);
        const state = view.book.get(published.id);
        if (def === undefined || state === undefined || this.#published.get(published.id) !== published)
          continue;
        if (view.publishes(def)) this.#figures(def, state, published, false, true);
      }
    }
    if (this.#held.size > 0) this.#arm();
  }

  /**
   * The asset's discovery configs, built again only when what they are built from changed: its
   * definition (a live change makes new ones) and whether its control is on (`ActionsEnabled`, not
   * applied live: read again with the definition).
   */
  #discover(def: AssetDef, published: Published, force: boolean): void {
    const discovery = this.#o.discovery;
    if (discovery === null || (!force && published.configsDef === def)) return;
    const actions = def.cords.every((c) => this.#o.actionsEnabled(c.instance));
    if (!force && published.configsDef === def && published.actions === actions) return;
    const configs = assetDiscovery(discovery, def, actions);
    const signature = configsSignature(configs);
    if (force || signature !== published.configs) {
      for (const [topic, payload] of configs) this.#o.sink.publish(topic, payload, 1, true);
      for (const topic of this.#configTopics(published))
        if (!configs.has(topic)) this.#o.sink.publish(topic, "", 1, true);
    }
    published.configsDef = def;
    published.actions = actions;
    published.configs = signature;
  }

  /** The topics of the discovery configs last published for an asset (built again from what they were built from). */
  #configTopics(published: Published): Iterable<string> {
    const discovery = this.#o.discovery;
    if (discovery === null || published.configsDef === null || published.configs === null) return [];
    return assetDiscovery(discovery, published.configsDef, published.actions).keys();
  }

  /** An asset no longer published here: its retained topics and configs cleared. */
  #clear(id: string): void {
    const published = this.#published.get(id);
    this.#published.delete(id);
    if (published === undefined) return;
    published.held = false;
    for (const level of ASSET_LEVELS)
      this.#o.sink.publish(this.#o.topics.asset(id, level), "", qosOf(level), true);
    for (const topic of this.#configTopics(published)) this.#o.sink.publish(topic, "", 1, true);
  }
}

/** Equal signatures: equal configs (a digest of their topics and payloads). */
function configsSignature(configs: ReadonlyMap<string, string>): string {
  const hash = createHash("sha256");
  for (const [topic, payload] of configs)
    hash.update(topic).update("\u0000").update(payload).update("\u0000");
  return hash.digest("base64");
}

/** A figure rounded as its payload says it; NaN when not known. */
const rounded = (value: number | null, digits: number): number =>
  value === null ? NaN : Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * A figure's payload: empty (the topic cleared) when not known, else the text `String` writes for
 * it. A figure rounded to `digits` decimals (as {@link rounded} makes it) between 0 and 1e9 is
 * written from its whole and fractional parts as integers: the same text, without the search for
 * the shortest decimal that `String` makes for a fraction (a figure of a thousand assets a second).
 */
export function figureText(value: number, digits: number): string {
  if (Number.isNaN(value)) return "";
  if (!(value > 0 && value < 1e9) || Number.isInteger(value)) return String(value);
  const scale = 10 ** digits;
  const scaled = Math.round(value * scale);
  if (scaled / scale !== value) return String(value);
  const whole = Math.floor(scaled / scale);
  let fraction = scaled - whole * scale;
  let width = digits;
  while (fraction % 10 === 0) {
    fraction /= 10;
    width--;
  }
  return `${whole}.${String(fraction).padStart(width, "0")}`;
}

const sameFigure = (a: number, b: number): boolean => a === b || (Number.isNaN(a) && Number.isNaN(b));

/** Whether a figure became known or not known. */
const knownMoved = (a: number, b: number): boolean => Number.isNaN(a) !== Number.isNaN(b);

/** The node id of every asset's discovery configs: `<P>-assets`. */
export function assetsNodeId(parentTopic: string): string {
  return `${idPart(parentTopic)}-assets`;
}

/** A value Home Assistant reads as unknown where the topic was cleared (a figure not known). */
const FIGURE_TEMPLATE = "{{ value if value | length > 0 else None }}";

/** Home Assistant's discovery configs of one asset: config topic → payload. */
export function assetDiscovery(
  options: Omit<DiscoveryOptions, "expireAfter">,
  def: AssetDef,
  actionsEnabled: boolean,
): Map<string, string> {
  const { topics, prefix } = options;
  const nodeId = assetsNodeId(topics.parent);
  const device = {
    identifiers: [`${nodeId}_${idPart(def.id)}`],
    name: def.label,
    manufacturer: "pdu-bridge",
    model: def.protected ? "Protected asset" : "Asset",
  };
  const common = {
    device,
    availability: [{ topic: topics.availability(def.cords[0]?.instance ?? "") }],
    origin: { name: "pdu-bridge" },
  };
  const out = new Map<string, string>();
  const add = (component: string, object: string, fields: Record<string, unknown>): void => {
    const objectId = `${idPart(def.id)}_${object}`;
    const uniqueId = `${nodeId}_${objectId}`;
    const slug = uniqueId.toLowerCase().replace(/[^a-z0-9]+/g, "_");
    const payload = {
      ...fields,
      unique_id: uniqueId,
      object_id: slug,
      default_entity_id: `${component}.${slug}`,
      ...common,
    };
    out.set(`${prefix}/${component}/${nodeId}/${objectId}/config`, JSON.stringify(payload));
  };
  add("sensor", "power", {
    name: "Power",
    state_topic: topics.asset(def.id, "power"),
    value_template: FIGURE_TEMPLATE,
    device_class: "power",
    state_class: "measurement",
    unit_of_measurement: "W",
  });
  add("sensor", "energy", {
    name: "Energy",
    state_topic: topics.asset(def.id, "energy"),
    value_template: FIGURE_TEMPLATE,
    device_class: "energy",
    state_class: "total_increasing",
    unit_of_measurement: "kWh",
  });
  add("sensor", "state", {
    name: "State",
    state_topic: topics.asset(def.id, "state"),
    device_class: "enum",
    options: ["on", "off", "partial", "unknown"],
  });
  add("binary_sensor", "redundancy", {
    name: "Redundancy",
    state_topic: topics.asset(def.id, "redundancy"),
    device_class: "problem",
    value_template: "{{ 'ON' if value == 'lost' else 'OFF' }}",
  });
  if (actionsEnabled) addAssetCommands(topics, def, add);
  return out;
}

/** A switch (none for a protected asset, which refuses `off`) and a reboot button. */
function addAssetCommands(
  topics: Topics,
  def: AssetDef,
  add: (component: string, object: string, fields: Record<string, unknown>) => void,
): void {
  const command = topics.assetCommand(def.id);
  if (!def.protected)
    add("switch", "power", {
      name: null,
      state_topic: topics.asset(def.id, "state"),
      // partial and unknown: neither on nor off.
      value_template: "{{ value if value in ['on', 'off'] else 'None' }}",
      command_topic: command,
      payload_on: "on",
      payload_off: "off",
      state_on: "on",
      state_off: "off",
      device_class: "outlet",
      qos: 1,
    });
  add("button", "reboot", {
    name: "Reboot",
    command_topic: command,
    // A protected asset's reboot needs its confirmation: pressing the button is it.
    payload_press: def.protected ? "reboot confirm" : "reboot",
    device_class: "restart",
    qos: 1,
  });
}
