/**
 * What a user of the bridge sees on the broker, read from outside the bridge process: a child of
 * the benchmark with two connections of its own (lib/mqtt-wire.ts, MQTT 3.1.1, QoS 0).
 *
 * - **Discovery**: every few seconds a pass reads, for each instance not yet complete, the retained
 *   configs under `<D>/+/<node_id>/+/config`, a few instances per subscription (at most
 *   ROUND_MESSAGES messages: a broker with its default limits drops what is over 1,000 queued for a
 *   client). Each round ends at a marker the reader publishes to itself after the SUBACK: the broker
 *   delivers a client's messages in order, so the marker comes after every retained config of the
 *   round. An instance is complete when its configs are exactly those it should have (lib/expected.ts:
 *   same topics, same payloads, nothing more); the time of the round that first found it so counts.
 *   `verify` reads every instance once more (did anything go after it was complete?).
 * - **Values**: a subscription to `<P>/#` from before the bridge starts; an instance is complete once
 *   every measurement topic it should publish was seen at least once.
 *
 * Run: `fork("dist/bench/lib/user-view.js", [configFile])`: it polls every configured PDU once with
 * the product's driver and derives what each instance should show (ready: a summary). Requests:
 * `watch {url}` (connect, subscribe, start the passes; returns the epoch ms it started at),
 * `status`, `verify`, `unwatch`, `plant {url}` (ghost and stale configs, see {@link plant}).
 */
import { loadConfigFile } from "../../src/config/load.js";
import type { Config } from "../../src/config/schema.js";
import { createDriver } from "../../src/pdu/drivers.js";
import { serveIpc, signalReady, sleep } from "./child.js";
import {
  compareConfigs,
  configKey,
  expectedInstance,
  hash53,
  PASS_EVERY_MS,
  readingRounds,
  splitConfigTopic,
  type ConfigComparison,
  type ExpectedInstance,
} from "./expected.js";
import { RawMqttClient, readPublish } from "./mqtt-wire.js";

/** A round whose marker does not come back within this is read again in the next pass. */
const MARKER_TIMEOUT_MS = 10_000;
/** PDUs polled at once while deriving what each instance should show. */
const POLL_CONCURRENCY = 16;

const configFile = process.argv[2]!;
const config: Config = await loadConfigFile(configFile, {});
const discoveryPrefix = config.HomeAssistant.DiscoveryTopic;
const prefixLevels = discoveryPrefix.split("/").length;
const parent = config.Mqtt.ParentTopic;

const expected: ExpectedInstance[] = [];
{
  const queue = [...config.instances];
  const results = new Map<string, ExpectedInstance>();
  await Promise.all(
    Array.from({ length: POLL_CONCURRENCY }, async () => {
      for (let instance = queue.shift(); instance !== undefined; instance = queue.shift()) {
        const driver = createDriver(instance);
        try {
          results.set(instance.id, expectedInstance(config, instance.id, await driver.poll()));
        } finally {
          await driver.close();
        }
      }
    }),
  );
  for (const instance of config.instances) expected.push(results.get(instance.id)!);
}
const byNodeId = new Map(expected.map((e) => [e.nodeId, e]));
const byInstance = new Map(expected.map((e) => [e.instanceId, e]));
const largestExpected = Math.max(1, ...expected.map((e) => e.configs.size));

interface InstanceView {
  /** Epoch ms of the round that first found its configs exact; null: not yet. */
  discoveredAt: number | null;
  /** The last comparison of its retained configs. */
  last: ConfigComparison | null;
  retained: number;
  /** Measurement topics not seen yet; null once all were. */
  valuesLeft: Set<number> | null;
  valuesAt: number | null;
}

interface Round {
  readonly collected: Map<string, Map<number, number>>;
  /** The payload of this round's marker (a late marker of an earlier round does not end it). */
  readonly token: string;
  markerSeen: () => void;
}

class Watch {
  readonly t0 = Date.now();
  readonly views = new Map<string, InstanceView>();
  readonly marker = `bench-user-view/${process.pid}/${Math.random().toString(36).slice(2)}`;
  discovery: RawMqttClient | null = null;
  values: RawMqttClient | null = null;
  round: Round | null = null;
  passes = 0;
  rounds = 0;
  lastPassMs = 0;
  markerTimeouts = 0;
  largestSeen = largestExpected;
  valueMessages = 0;
  unexpectedValues = 0;
  discoveryAt: number | null = null;
  valuesAt: number | null = null;
  stopping = false;
  running: Promise<void> = Promise.resolve();

  constructor() {
    for (const e of expected)
      this.views.set(e.instanceId, {
        discoveredAt: null,
        last: null,
        retained: 0,
        valuesLeft: new Set(e.values),
        valuesAt: null,
      });
  }

  onConfig(first: number, buf: Buffer, start: number, length: number): void {
    const { topic, payload } = readPublish(first, buf, start, length);
    const round = this.round;
    if (round === null) return;
    if (topic === this.marker) {
      if (payload.toString("utf8") === round.token) round.markerSeen();
      return;
    }
    const parts = splitConfigTopic(topic, prefixLevels);
    if (parts === null) return;
    const instance = byNodeId.get(parts.nodeId);
    const collected = instance === undefined ? undefined : round.collected.get(instance.instanceId);
    if (collected === undefined) return;
    const key = configKey(parts.component, parts.objectId);
    // An empty retained payload clears a config (a live clear can arrive within the round).
    if (payload.length === 0) collected.delete(key);
    else collected.set(key, hash53(payload.toString("utf8")));
  }

  onValue(first: number, buf: Buffer, start: number, length: number): void {
    this.valueMessages++;
    const topic = readPublish(first, buf, start, length).topic;
    if (!topic.startsWith(`${parent}/`) || !topic.includes("/measurements/")) return;
    const rest = topic.slice(parent.length + 1);
    const slash = rest.indexOf("/");
    if (slash < 0) return;
    const id = rest.slice(0, slash);
    const view = this.views.get(id);
    const left = view?.valuesLeft;
    if (view === undefined || left === undefined || left === null) return;
    const h = hash53(rest.slice(slash + 1));
    if (!left.delete(h)) {
      if (!byInstance.get(id)!.values.has(h)) this.unexpectedValues++;
      return;
    }
    if (left.size > 0) return;
    view.valuesLeft = null;
    view.valuesAt = Date.now();
    if ([...this.views.values()].every((v) => v.valuesAt !== null)) {
      this.valuesAt = view.valuesAt;
      // Everything was seen: stop loading the broker and the machine with the fleet's values.
      const client = this.values;
      this.values = null;
      void client?.close();
    }
  }

  /** One reading pass over `ids`; `final`: a check that records nothing as newly complete. */
  async pass(ids: readonly string[], final: boolean): Promise<Map<string, ConfigComparison>> {
    const client = this.discovery;
    const out = new Map<string, ConfigComparison>();
    if (client === null) return out;
    for (const roundIds of readingRounds(ids, this.largestSeen)) {
      if (this.stopping && !final) break;
      const collected = new Map(roundIds.map((id) => [id, new Map<number, number>()]));
      let markerSeen!: () => void;
      const marked = new Promise<boolean>((resolve) => {
        markerSeen = () => resolve(true);
        setTimeout(() => resolve(false), MARKER_TIMEOUT_MS).unref();
      });
      const round: Round = { collected, token: String(++this.rounds), markerSeen };
      this.round = round;
      const filters = roundIds.map((id) => `${discoveryPrefix}/+/${byInstance.get(id)!.nodeId}/+/config`);
      await client.subscribe(filters);
      // What the round reads was retained when the broker took the subscription: by this time.
      const at = Date.now();
      client.publish(this.marker, round.token);
      const complete = await marked;
      this.round = null;
      void client.unsubscribe(filters);
      if (client.closed) break;
      if (!complete) {
        this.markerTimeouts++;
        continue;
      }
      for (const [id, configs] of collected) {
        const e = byInstance.get(id)!;
        const comparison = compareConfigs(e.configs, configs);
        out.set(id, comparison);
        this.largestSeen = Math.max(this.largestSeen, configs.size);
        if (final) continue;
        const view = this.views.get(id)!;
        view.last = comparison;
        view.retained = configs.size;
        if (comparison.exact && view.discoveredAt === null) view.discoveredAt = at;
      }
    }
    return out;
  }

  async loop(): Promise<void> {
    while (!this.stopping && this.discoveryAt === null) {
      const started = Date.now();
      const open = [...this.views].filter(([, v]) => v.discoveredAt === null).map(([id]) => id);
      await this.pass(open, false);
      this.passes++;
      this.lastPassMs = Date.now() - started;
      const views = [...this.views.values()];
      if (views.every((v) => v.discoveredAt !== null))
        this.discoveryAt = Math.max(...views.map((v) => v.discoveredAt!));
      const wait = PASS_EVERY_MS - (Date.now() - started);
      if (wait > 0 && this.discoveryAt === null && !this.stopping) await sleep(wait);
    }
  }

  status(): Record<string, unknown> {
    const views = [...this.views.values()];
    const sum = (pick: (c: ConfigComparison) => number) =>
      views.reduce((n, v) => n + (v.discoveredAt !== null ? 0 : v.last === null ? 0 : pick(v.last)), 0);
    const configsExpected = expected.reduce((n, e) => n + e.configs.size, 0);
    return {
      t0: this.t0,
      discovery: {
        instances: views.length,
        complete: views.filter((v) => v.discoveredAt !== null).length,
        completeAt: this.discoveryAt,
        instanceTimes: views.flatMap((v) => (v.discoveredAt === null ? [] : [v.discoveredAt])),
        configsExpected,
        // Complete instances hold their expected configs; the others what the last pass read.
        configsRetained: views.reduce(
          (n, v, i) => n + (v.discoveredAt !== null ? expected[i]!.configs.size : v.retained),
          0,
        ),
        missing: sum((c) => c.missing),
        extra: sum((c) => c.extra),
        differing: sum((c) => c.differing),
        neverRead: views.filter((v) => v.last === null && v.discoveredAt === null).length,
        passes: this.passes,
        lastPassMs: this.lastPassMs,
        markerTimeouts: this.markerTimeouts,
      },
      values: {
        instances: views.length,
        complete: views.filter((v) => v.valuesAt !== null).length,
        completeAt: this.valuesAt,
        instanceTimes: views.flatMap((v) => (v.valuesAt === null ? [] : [v.valuesAt])),
        expected: expected.reduce((n, e) => n + e.values.size, 0),
        seen: views.reduce(
          (n, v, i) => n + expected[i]!.values.size - (v.valuesLeft === null ? 0 : v.valuesLeft.size),
          0,
        ),
        unexpected: this.unexpectedValues,
        messages: this.valueMessages,
      },
    };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    await Promise.all([this.discovery?.close(), this.values?.close()]);
    this.discovery = null;
    this.values = null;
  }
}

let watch: Watch | null = null;

async function startWatch(url: string): Promise<number> {
  if (watch !== null) await watch.stop();
  const w = new Watch();
  watch = w;
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  w.values = await RawMqttClient.connect(url, `bench-values-${tag}`, (f, b, s, l) => w.onValue(f, b, s, l));
  await w.values.subscribe([`${parent}/#`]);
  w.discovery = await RawMqttClient.connect(url, `bench-discovery-${tag}`, (f, b, s, l) =>
    w.onConfig(f, b, s, l),
  );
  await w.discovery.subscribe([w.marker]);
  w.running = w.loop();
  return w.t0;
}

/** Reads every instance once more now: how many are exact, and what is missing, extra or differing. */
async function verify(): Promise<Record<string, number>> {
  const w = watch;
  if (w === null) throw new Error("not watching");
  w.stopping = true;
  await w.running;
  const comparisons = await w.pass(
    expected.map((e) => e.instanceId),
    true,
  );
  const all = [...comparisons.values()];
  return {
    instances: expected.length,
    read: all.length,
    exact: all.filter((c) => c.exact).length,
    missing: all.reduce((n, c) => n + c.missing, 0),
    extra: all.reduce((n, c) => n + c.extra, 0),
    differing: all.reduce((n, c) => n + c.differing, 0),
    markerTimeouts: w.markerTimeouts,
  };
}

/**
 * What a bridge finds on the broker after a restart in real life, beyond its own configs: per
 * instance one retained config of a thing that is gone (an outlet that no longer exists: its ghost
 * cleanup must clear it) and one of its configs with an old payload (its discovery must replace
 * it). Resolves once the broker has them (a marker round trip on the same connection).
 */
async function plant(url: string): Promise<{ ghosts: number; stale: number }> {
  const client = await RawMqttClient.connect(url, `bench-plant-${process.pid}`, () => undefined);
  const marker = `bench-user-view/${process.pid}/plant`;
  let ghosts = 0;
  let stale = 0;
  try {
    for (const e of expected) {
      if (e.firstDeviceId !== null) {
        const objectId = `outlet_${e.firstDeviceId}_999_realPower`;
        client.publish(
          `${discoveryPrefix}/sensor/${e.nodeId}/${objectId}/config`,
          JSON.stringify({ name: "Real power", unique_id: `${e.nodeId}_${objectId}`, state_topic: "gone" }),
          true,
        );
        ghosts++;
      }
      if (e.sampleConfigTopic !== null) {
        client.publish(e.sampleConfigTopic, JSON.stringify({ name: "from an older version" }), true);
        stale++;
      }
    }
    let seen!: () => void;
    const back = new Promise<void>((resolve) => (seen = resolve));
    const probe = await RawMqttClient.connect(url, `bench-plant-probe-${process.pid}`, () => seen());
    try {
      await probe.subscribe([marker]);
      client.publish(marker, "planted");
      await back;
    } finally {
      await probe.close();
    }
  } finally {
    await client.close();
  }
  return { ghosts, stale };
}

serveIpc(async (cmd, message) => {
  switch (cmd) {
    case "watch":
      return startWatch(String(message.url));
    case "status":
      if (watch === null) throw new Error("not watching");
      return watch.status();
    case "verify":
      return verify();
    case "unwatch":
      await watch?.stop();
      watch = null;
      return null;
    case "plant":
      return plant(String(message.url));
    default:
      throw new Error(`unknown command ${cmd}`);
  }
});
const range = (list: readonly number[]) => ({
  min: Math.min(...list),
  max: Math.max(...list),
  total: list.reduce((a, b) => a + b, 0),
});
signalReady({
  instances: expected.length,
  configs: range(expected.map((e) => e.configs.size)),
  values: range(expected.map((e) => e.values.size)),
});
