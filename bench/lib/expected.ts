/**
 * What a user should find on the broker for one instance, derived with the product's own code from
 * the PDU as it answers: the Home Assistant discovery configs (`discoveryShape` + `buildDiscovery`,
 * as the publisher builds them) and the value topics of its measurements (`Topics`). Kept as 53-bit
 * hashes, so a reader of a 4000-PDU fleet holds numbers, not 700,000 topics and payloads.
 */
import type { Config } from "../../src/config/schema.js";
import { silentLogger } from "../../src/log.js";
import { buildDiscovery, discoveryNodeId, discoveryShape } from "../../src/mqtt/discovery.js";
import { LoadTracker, thresholdsOf } from "../../src/pdu/load.js";
import { TopicIdGuard, Topics } from "../../src/mqtt/topics.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { applyOverrides, publishedView } from "../../src/pdu/overrides.js";

/** A 53-bit hash of a string (cyrb53): equal strings, equal hashes; a collision among a few hundred is negligible. */
export function hash53(s: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

export interface ExpectedInstance {
  readonly instanceId: string;
  /** `<P>_<instance>`: the third level of its config topics. */
  readonly nodeId: string;
  /** hash of `<component>/<object_id>` → hash of the payload, for every config it should have retained. */
  readonly configs: ReadonlyMap<number, number>;
  /** hash of the topic below `<P>/<instance>/` of every measurement it should publish. */
  readonly values: ReadonlySet<number>;
  /** One config topic (whole) and the first device id: the material of planted ghosts. */
  readonly sampleConfigTopic: string | null;
  readonly firstDeviceId: string | null;
}

/** The key of a config topic `<prefix>/<component>/<node_id>/<object_id>/config` below its node id. */
export function configKey(component: string, objectId: string): number {
  return hash53(`${component}/${objectId}`);
}

/**
 * Splits a discovery config topic into component, node id and object id; null when it is not one
 * (`prefixLevels`: the discovery prefix's number of levels).
 */
export function splitConfigTopic(
  topic: string,
  prefixLevels: number,
): { component: string; nodeId: string; objectId: string } | null {
  const levels = topic.split("/");
  if (levels.length !== prefixLevels + 4 || levels[levels.length - 1] !== "config") return null;
  return {
    component: levels[prefixLevels]!,
    nodeId: levels[prefixLevels + 1]!,
    objectId: levels[prefixLevels + 2]!,
  };
}

/**
 * The discovery configs and value topics of one instance whose PDU answered `polled` (its driver's
 * snapshot), seen as the publisher sees it: the instance's overrides and `Measurements` applied,
 * hidden things left out.
 */
export function expectedInstance(config: Config, instanceId: string, polled: Snapshot): ExpectedInstance {
  const topics = new Topics(config.Mqtt.ParentTopic);
  const guard = new TopicIdGuard(silentLogger());
  const ha = config.HomeAssistant;
  const instance = config.instances.find((i) => i.id === instanceId);
  if (instance === undefined) throw new Error(`no instance ${instanceId} in the configuration`);
  const effective = applyOverrides(polled, instance);
  // Loads as the store assesses them (their sensors are discovered): the first poll's report.
  const load = new LoadTracker(instance.Ratings, thresholdsOf(config.Alarms)).assess(effective).report;
  const snapshot = publishedView(effective);
  const configs = new Map<number, number>();
  let sampleConfigTopic: string | null = null;
  if (ha.DiscoveryEnabled) {
    const prefixLevels = ha.DiscoveryTopic.split("/").length;
    const built = buildDiscovery(
      { topics, prefix: ha.DiscoveryTopic, expireAfter: ha.SensorExpireAfterSeconds },
      instanceId,
      instance.ActionsEnabled,
      // The service always keeps lifetime energy counters: each energy reading has its sensor.
      discoveryShape(instanceId, snapshot, guard, load, true),
    );
    for (const [topic, payload] of built) {
      const parts = splitConfigTopic(topic, prefixLevels);
      if (parts === null) throw new Error(`not a discovery config topic: ${topic}`);
      configs.set(configKey(parts.component, parts.objectId), hash53(payload));
      sampleConfigTopic ??= topic;
    }
  }
  const values = new Set<number>();
  const below = `${topics.parent}/${instanceId}/`;
  const add = (topic: string) => values.add(hash53(topic.slice(below.length)));
  for (const device of snapshot.devices) {
    if (!guard.ok(instanceId, "device id", device.id)) continue;
    for (const outlet of device.outlets) {
      for (const m of outlet.measurements)
        if (m.value !== null && guard.ok(instanceId, "measurement type", m.type))
          add(topics.outletMeasurement(instanceId, device.id, outlet.index, m.type));
    }
    for (const entity of device.entities) {
      if (!guard.ok(instanceId, "entity key", entity.key)) continue;
      for (const m of entity.measurements)
        if (m.value !== null && guard.ok(instanceId, "measurement type", m.type))
          add(topics.entityMeasurement(instanceId, device.id, entity.key, m.type));
    }
  }
  for (const group of snapshot.groups) {
    if (!guard.ok(instanceId, "group key", group.key)) continue;
    for (const m of group.measurements)
      if (
        [m.sum, m.avg, m.min, m.max].some((v) => v !== null) &&
        guard.ok(instanceId, "group measurement key", m.key)
      )
        add(topics.groupMeasurement(instanceId, group.key, m.key));
  }
  return {
    instanceId,
    nodeId: discoveryNodeId(config.Mqtt.ParentTopic, instanceId),
    configs,
    values,
    sampleConfigTopic,
    firstDeviceId: snapshot.devices[0]?.id ?? null,
  };
}

/** How one instance's retained configs compare with what it should have. */
export interface ConfigComparison {
  /** Expected configs not retained. */
  readonly missing: number;
  /** Retained configs it should not have (ghosts). */
  readonly extra: number;
  /** Retained under an expected topic with another payload. */
  readonly differing: number;
  /** Nothing missing, extra or differing. */
  readonly exact: boolean;
}

/** Compares the configs read for an instance (config key → payload hash) with the expected ones. */
export function compareConfigs(
  expected: ReadonlyMap<number, number>,
  retained: ReadonlyMap<number, number>,
): ConfigComparison {
  let missing = 0;
  let differing = 0;
  for (const [key, payload] of expected) {
    const got = retained.get(key);
    if (got === undefined) missing++;
    else if (got !== payload) differing++;
  }
  let extra = 0;
  for (const key of retained.keys()) if (!expected.has(key)) extra++;
  return { missing, extra, differing, exact: missing === 0 && extra === 0 && differing === 0 };
}

/**
 * How many retained messages one reading round may ask the broker for: mosquitto with its default
 * configuration queues at most 1,000 messages (QoS 0 included) for a client and drops the rest, so a
 * round subscribes to as many instances as stay below this with room to spare.
 */
export const ROUND_MESSAGES = 800;

/**
 * Splits instances into reading rounds: each round as many instances as `perInstance` configs each
 * fit into {@link ROUND_MESSAGES} (at least one).
 */
export function readingRounds<T>(
  instances: readonly T[],
  perInstance: number,
  budget = ROUND_MESSAGES,
): T[][] {
  const size = Math.max(1, Math.floor(budget / Math.max(1, perInstance)));
  const rounds: T[][] = [];
  for (let i = 0; i < instances.length; i += size) rounds.push(instances.slice(i, i + size));
  return rounds;
}

/** A reading pass over the instances not yet complete starts this long after the previous one started. */
export const PASS_EVERY_MS = 2000;
