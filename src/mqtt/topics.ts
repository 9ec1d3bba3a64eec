/**
 * MQTT topic names (docs/mqtt.md, "Topics"): the one place that builds them, and the parser that turns a
 * received command topic back into (instance, target, command).
 *
 * Ids are used exactly as the PDU reports them. An id that cannot safely be a topic level
 * ({@link nameProblem}: empty, over 128 bytes, `.`/`..`, `/ + #`, control characters,
 * noncharacters, lone surrogates) is never rewritten: whatever it belongs to is skipped, with one
 * warning per id ({@link TopicIdGuard}, bounded and rate-limited). Every whole topic is checked
 * again just before it is published ({@link topicProblem}).
 */
import { createHash } from "node:crypto";
import type { Logger } from "../log.js";
import { mqttLevels } from "../control/commands.js";
import { SETTING_NAMES, type SettingName } from "../control/settings.js";
import type { ControlTarget } from "../control/types.js";
import { forbiddenCharacter, nameProblem, quoteName } from "../names.js";

/** The level under the parent topic that holds the assets' topics (no instance id can be it). */
export const ASSETS_LEVEL = "$assets";
/** Command levels of an asset: `set` (on, off, reboot; ./asset-commands.ts). */
export const ASSET_COMMANDS: readonly string[] = ["set"];

/** Command topic levels of an outlet and of a group (from the command table, src/control/commands.ts). */
export const OUTLET_COMMANDS: readonly string[] = mqttLevels("outlet");
export const GROUP_COMMANDS: readonly string[] = mqttLevels("group");
/** The last level of a setting's command topic (`…/outlets/<i>/<setting>/set`). */
export const SETTING_COMMAND = "set";
/** A command topic's last level (`set`, `reboot`, `resetStats`). */
export type OutletCommand = string;

/** Outlet indexes as the PDU writes map keys: 0-based, no sign, no leading zeros. */
const INDEX = /^(0|[1-9][0-9]{0,8})$/;

/** Longest topic MQTT can carry (a 16-bit length), in UTF-8 bytes. */
export const MAX_TOPIC_BYTES = 65535;

/** Why `id` cannot be one topic level, or null when it can (the shared "safe name" predicate). */
export function topicUnsafe(id: string): string | null {
  return nameProblem(id);
}

/**
 * Why a whole topic cannot be published, or null when it can: empty, over 65,535 UTF-8 bytes,
 * a wildcard, or a character a strict broker refuses (it would drop the whole connection).
 */
export function topicProblem(topic: string): string | null {
  if (topic === "") return "is empty";
  if (topic.length * 3 > MAX_TOPIC_BYTES && Buffer.byteLength(topic, "utf8") > MAX_TOPIC_BYTES) {
    return `is longer than ${MAX_TOPIC_BYTES} bytes`;
  }
  if (topic.includes("+") || topic.includes("#")) return "contains a wildcard ('+' or '#')";
  const bad = forbiddenCharacter(topic);
  return bad === null ? null : `contains ${bad}`;
}

/** Distinct unsafe ids remembered as already warned about (oldest forgotten first). */
export const WARNED_IDS_MAX = 1024;
/** Warnings about unsafe ids logged per {@link WARN_WINDOW_MS} at most; the rest are counted. */
export const WARNINGS_PER_WINDOW = 20;
export const WARN_WINDOW_MS = 60_000;

/**
 * Skips ids that cannot be topic levels, warning once per (instance, kind, id). The set of ids
 * already warned about is bounded ({@link WARNED_IDS_MAX}, oldest first out, long ids kept as a
 * digest) and warnings are rate-limited, so a PDU inventing a new bad id every poll costs neither
 * memory nor a flood of log lines.
 */
export class TopicIdGuard {
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #warned = new Set<string>();
  #windowStart = -Infinity;
  #windowCount = 0;
  #suppressed = 0;
  /** Unsafe ids met (every check that refused, repeated ones included). */
  skipped = 0;

  constructor(logger: Logger, now: () => number = Date.now) {
    this.#logger = logger;
    this.#now = now;
  }

  /** Ids remembered as warned about (at most {@link WARNED_IDS_MAX}). */
  get warnedSize(): number {
    return this.#warned.size;
  }

  ok(instanceId: string, kind: string, id: string): boolean {
    const problem = nameProblem(id);
    if (problem === null) return true;
    this.skipped++;
    const raw = `${instanceId}\u0000${kind}\u0000${id}`;
    const key = raw.length > 256 ? createHash("sha256").update(raw).digest("base64") : raw;
    if (this.#warned.has(key)) return false;
    if (this.#warned.size >= WARNED_IDS_MAX) {
      const oldest = this.#warned.values().next();
      if (oldest.done !== true) this.#warned.delete(oldest.value);
    }
    this.#warned.add(key);
    const now = this.#now();
    if (now - this.#windowStart >= WARN_WINDOW_MS) {
      this.#windowStart = now;
      this.#windowCount = 0;
    }
    if (this.#windowCount >= WARNINGS_PER_WINDOW) {
      this.#suppressed++;
      return false;
    }
    this.#windowCount++;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    this.#logger.warn(
      { instance: instanceId, kind, id: quoteName(id), ...(suppressed > 0 ? { suppressed } : {}) },
      `${kind} ${quoteName(id)} ${problem}: skipped, it cannot be part of an MQTT topic` +
        (suppressed > 0 ? ` (${suppressed} similar warnings suppressed before this one)` : ""),
    );
    return false;
  }
}

/**
 * What a topic a poll publishes is for: one key per topic of an instance. The publisher's walk asks
 * its {@link Track} for the slot of a key; {@link Topics.topic} names it.
 */
export type TopicKey =
  | { readonly kind: "deviceState"; readonly deviceId: string }
  | { readonly kind: "deviceAlarm"; readonly deviceId: string }
  | { readonly kind: "outletState"; readonly deviceId: string; readonly index: number }
  | { readonly kind: "outletLabel"; readonly deviceId: string; readonly index: number }
  | {
      readonly kind: "outletSetting";
      readonly deviceId: string;
      readonly index: number;
      readonly setting: SettingName;
    }
  | {
      readonly kind: "outletMeasurement";
      readonly deviceId: string;
      readonly index: number;
      readonly type: string;
    }
  | {
      readonly kind: "entityMeasurement";
      readonly deviceId: string;
      readonly entityKey: string;
      readonly type: string;
    }
  | { readonly kind: "groupMeasurement"; readonly groupKey: string; readonly key: string };

export type TopicKind = TopicKey["kind"];

export type ParsedCommand =
  | {
      readonly ok: true;
      readonly instanceId: string;
      readonly target: ControlTarget;
      /** The topic's last level: which commands its payload may name (src/control/commands.ts). */
      readonly command: OutletCommand;
      /** Set only on a setting's command topic (`…/outlets/<i>/<setting>/set`): which setting. */
      readonly setting?: SettingName;
    }
  | { readonly ok: false; readonly instanceId: string | null; readonly reason: string };

/**
 * This replica among several (docs/cluster.md): its member name, and the bucket of an instance
 * (a stable hash of its id), which names the instance's availability topic.
 */
export interface ReplicaTopics {
  readonly member: string;
  bucketOf(instanceId: string): number;
}

/** The retained topics of an asset, by their last level. */
export const ASSET_LEVELS = ["state", "power", "energy", "redundancy"] as const;
export type AssetLevel = (typeof ASSET_LEVELS)[number];

export class Topics {
  /** `Mqtt.ParentTopic`, used as given. */
  readonly parent: string;
  readonly #prefix: string;
  readonly #replica: ReplicaTopics | null;

  constructor(parent: string, replica: ReplicaTopics | null = null) {
    this.parent = parent;
    this.#prefix = `${parent}/`;
    this.#replica = replica;
  }

  /**
   * Bridge availability: `online` / `offline`, retained (also the last will). Among several
   * replicas each has its own, `P/$replicas/<member>/status`, for operators only: discovery's
   * availability names the bucket's topic instead ({@link availability}).
   */
  bridgeStatus(): string {
    const replica = this.#replica;
    return replica === null ? `${this.parent}/status` : `${this.parent}/$replicas/${replica.member}/status`;
  }

  /**
   * The availability of a bucket of instances among several replicas, `P/$buckets/<n>/status`:
   * `online` from its holder, `offline` as the will of the holder's connection for the bucket.
   * A level no instance id can be (`$`), like the sweep marker's.
   */
  bucketStatus(bucket: number): string {
    return `${this.parent}/$buckets/${bucket}/status`;
  }

  /**
   * The topic an instance's availability depends on besides its own status: the bridge's, or
   * among several replicas the instance's bucket's (stable: the same whichever replica holds it).
   */
  availability(instanceId: string): string {
    const replica = this.#replica;
    return replica === null ? this.bridgeStatus() : this.bucketStatus(replica.bucketOf(instanceId));
  }

  /**
   * Where the bridge publishes markers for itself (the ghost cleanup's, src/mqtt/ghost-cleanup.ts): a level
   * no instance id can be (`$` is not allowed in one), so no instance's topics are near it.
   */
  sweepMarker(): string {
    return `${this.parent}/$bridge/sweep`;
  }

  /** Home Assistant's own status topic (`online` when it starts) under its discovery prefix. */
  static homeAssistantStatus(discoveryPrefix: string): string {
    return `${discoveryPrefix}/status`;
  }

  /** The topic of a key of instance `instanceId`. */
  topic(instanceId: string, key: TopicKey): string {
    switch (key.kind) {
      case "deviceState":
        return this.deviceState(instanceId, key.deviceId);
      case "deviceAlarm":
        return this.deviceAlarm(instanceId, key.deviceId);
      case "outletState":
        return this.outletState(instanceId, key.deviceId, key.index);
      case "outletLabel":
        return this.outletLabel(instanceId, key.deviceId, key.index);
      case "outletSetting":
        return this.outletSetting(instanceId, key.deviceId, key.index, key.setting);
      case "outletMeasurement":
        return this.outletMeasurement(instanceId, key.deviceId, key.index, key.type);
      case "entityMeasurement":
        return this.entityMeasurement(instanceId, key.deviceId, key.entityKey, key.type);
      case "groupMeasurement":
        return this.groupMeasurement(instanceId, key.groupKey, key.key);
    }
  }

  instanceStatus(instanceId: string): string {
    return `${this.parent}/${instanceId}/status`;
  }

  deviceState(instanceId: string, deviceId: string): string {
    return `${this.parent}/${instanceId}/${deviceId}/state`;
  }

  deviceAlarm(instanceId: string, deviceId: string): string {
    return `${this.parent}/${instanceId}/${deviceId}/alarm`;
  }

  outletState(instanceId: string, deviceId: string, index: number): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/state`;
  }

  outletLabel(instanceId: string, deviceId: string, index: number): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/label`;
  }

  /** A setting's retained value (`label` is {@link outletLabel}, the same topic). */
  outletSetting(instanceId: string, deviceId: string, index: number, setting: SettingName): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/${setting}`;
  }

  /** A setting's command topic: `…/outlets/<i>/<setting>/set`. */
  outletSettingCommand(instanceId: string, deviceId: string, index: number, setting: SettingName): string {
    return `${this.outletSetting(instanceId, deviceId, index, setting)}/${SETTING_COMMAND}`;
  }

  outletMeasurement(instanceId: string, deviceId: string, index: number, type: string): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/measurements/${type}`;
  }

  entityMeasurement(instanceId: string, deviceId: string, entityKey: string, type: string): string {
    return `${this.parent}/${instanceId}/${deviceId}/entity/${entityKey}/measurements/${type}`;
  }

  groupMeasurement(instanceId: string, groupKey: string, key: string): string {
    return `${this.parent}/${instanceId}/groups/${groupKey}/measurements/${key}`;
  }

  /** An outlet's load against its rating (retained JSON; src/mqtt/alarms.ts). */
  outletLoad(instanceId: string, deviceId: string, index: number): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/load`;
  }

  /** An entity's load against its rating (retained JSON). */
  entityLoad(instanceId: string, deviceId: string, entityKey: string): string {
    return `${this.parent}/${instanceId}/${deviceId}/entity/${entityKey}/load`;
  }

  /** The instance's active alarms (retained JSON list). */
  alarms(instanceId: string): string {
    return `${this.parent}/${instanceId}/alarms`;
  }

  /** How many active alarms the retained list leaves out, to fit in one packet (retained count). */
  alarmsOmitted(instanceId: string): string {
    return `${this.parent}/${instanceId}/alarms/omitted`;
  }

  /** Alarms raised, changed and cleared (not retained). */
  events(instanceId: string): string {
    return `${this.parent}/${instanceId}/events`;
  }

  /**
   * One of an asset's retained topics (docs/assets.md): `P/$assets/<asset>/<level>`, level `state`,
   * `power`, `energy` or `redundancy`. `$assets` is a level no instance id can be; the scope's own
   * `alarms` and `events` topics ({@link alarms}, {@link events} of `$assets`) are one level up.
   */
  asset(assetId: string, level: AssetLevel): string {
    return `${this.parent}/$assets/${assetId}/${level}`;
  }

  /** An asset's command topic, `P/$assets/<asset>/set` (`on`, `off`, `reboot`). */
  assetCommand(assetId: string): string {
    return `${this.parent}/$assets/${assetId}/set`;
  }

  outletCommand(instanceId: string, deviceId: string, index: number, command: OutletCommand): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/${command}`;
  }

  groupCommand(instanceId: string, groupKey: string, command: OutletCommand = "set"): string {
    return `${this.parent}/${instanceId}/groups/${groupKey}/${command}`;
  }

  /** Subscriptions that receive every command topic of one instance (and nothing it publishes). */
  commandSubscriptions(instanceId: string): string[] {
    return [
      ...OUTLET_COMMANDS.map((c) => `${this.parent}/${instanceId}/+/outlets/+/${c}`),
      ...GROUP_COMMANDS.map((c) => `${this.parent}/${instanceId}/groups/+/${c}`),
      ...SETTING_NAMES.map((s) => `${this.parent}/${instanceId}/+/outlets/+/${s}/${SETTING_COMMAND}`),
    ];
  }

  /**
   * Whether `topic` has the shape of a command topic of any instance (what other clients may
   * publish under the parent topic; everything else there is the bridge's).
   */
  isCommandShaped(topic: string): boolean {
    if (!topic.startsWith(this.#prefix)) return false;
    // Level by level as a broker matches the command subscriptions (`+` matches an empty level too),
    // so a malformed command still reaches the bridge, which refuses it with a reason.
    const levels = topic.slice(this.#prefix.length).split("/");
    switch (levels.length) {
      case 3:
        return levels[0] === ASSETS_LEVEL && ASSET_COMMANDS.includes(levels[2] ?? "");
      case 4:
        return levels[1] === "groups" && GROUP_COMMANDS.includes(levels[3] ?? "");
      case 5:
        return levels[2] === "outlets" && OUTLET_COMMANDS.includes(levels[4] ?? "");
      case 6:
        return (
          levels[2] === "outlets" &&
          levels[5] === SETTING_COMMAND &&
          SETTING_NAMES.some((name) => name === levels[4])
        );
      default:
        return false;
    }
  }

  /** A received topic back to (instance, target, command); refuses anything not exactly a command topic. */
  parseCommand(topic: string): ParsedCommand {
    if (!topic.startsWith(this.#prefix)) return refuse(null, "not under the parent topic");
    const levels = topic.slice(this.#prefix.length).split("/");
    const instanceId = levels[0] ?? "";
    if (levels.some((l) => topicUnsafe(l) !== null)) {
      return refuse(instanceId === "" ? null : instanceId, "empty, wildcard or unsafe topic level");
    }
    const groupCommand = levels.length === 4 && levels[1] === "groups" ? levels[3] : undefined;
    if (groupCommand !== undefined && GROUP_COMMANDS.includes(groupCommand)) {
      return {
        ok: true,
        instanceId,
        target: { kind: "group", groupKey: levels[2] ?? "" },
        command: groupCommand,
      };
    }
    if (levels.length === 5 && levels[2] === "outlets") {
      const deviceId = levels[1] ?? "";
      const index = levels[3] ?? "";
      const command = OUTLET_COMMANDS.find((c) => c === levels[4]);
      if (command === undefined) return refuse(instanceId, `unknown command ${JSON.stringify(levels[4])}`);
      if (!INDEX.test(index))
        return refuse(instanceId, `outlet index ${JSON.stringify(index)} is not an integer`);
      return { ok: true, instanceId, target: { kind: "outlet", deviceId, index: Number(index) }, command };
    }
    if (levels.length === 6 && levels[2] === "outlets" && levels[5] === SETTING_COMMAND) {
      const setting = SETTING_NAMES.find((n) => n === levels[4]);
      const index = levels[3] ?? "";
      if (setting === undefined) return refuse(instanceId, `unknown setting ${JSON.stringify(levels[4])}`);
      if (!INDEX.test(index))
        return refuse(instanceId, `outlet index ${JSON.stringify(index)} is not an integer`);
      const target = { kind: "outlet", deviceId: levels[1] ?? "", index: Number(index) } as const;
      return { ok: true, instanceId, target, command: SETTING_COMMAND, setting };
    }
    return refuse(instanceId, "not a command topic");
  }
}

function refuse(instanceId: string | null, reason: string): ParsedCommand {
  return { ok: false, instanceId, reason };
}
