/**
 * MQTT topic names (contract §3): the one place that builds them, and the parser that turns a
 * received command topic back into (instance, target, command).
 *
 * Ids are used exactly as the PDU reports them. An id that cannot be a topic level (empty, or with
 * `/`, `+`, `#` or NUL in it) is never rewritten: whatever it belongs to is skipped, with one
 * warning per id ({@link TopicIdGuard}).
 */
import type { Logger } from "../log.js";
import type { ControlTarget } from "../control/types.js";

export const OUTLET_COMMANDS = ["set", "reboot", "resetStats"] as const;
export type OutletCommand = (typeof OUTLET_COMMANDS)[number];

const UNSAFE_CHARS = ["/", "+", "#", "\u0000"];
/** Outlet indexes as the PDU writes map keys: 0-based, no sign, no leading zeros. */
const INDEX = /^(0|[1-9][0-9]{0,8})$/;

/** Why `id` cannot be one topic level, or null when it can. */
export function topicUnsafe(id: string): string | null {
  if (id === "") return "is empty";
  if (UNSAFE_CHARS.some((c) => id.includes(c))) return "contains '/', '+', '#' or NUL";
  return null;
}

/** Skips ids that cannot be topic levels, warning once per (instance, kind, id). */
export class TopicIdGuard {
  readonly #logger: Logger;
  readonly #warned = new Set<string>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  ok(instanceId: string, kind: string, id: string): boolean {
    const problem = topicUnsafe(id);
    if (problem === null) return true;
    const key = `${instanceId}\u0000${kind}\u0000${id}`;
    if (!this.#warned.has(key)) {
      this.#warned.add(key);
      this.#logger.warn(
        { instance: instanceId, kind, id },
        `${kind} ${JSON.stringify(id)} ${problem}: skipped, it cannot be part of an MQTT topic`,
      );
    }
    return false;
  }
}

export type ParsedCommand =
  | {
      readonly ok: true;
      readonly instanceId: string;
      readonly target: ControlTarget;
      /** `set` for groups. */
      readonly command: OutletCommand;
    }
  | { readonly ok: false; readonly instanceId: string | null; readonly reason: string };

export class Topics {
  /** `Mqtt.ParentTopic`, used as given. */
  readonly parent: string;
  readonly #prefix: string;

  constructor(parent: string) {
    this.parent = parent;
    this.#prefix = `${parent}/`;
  }

  /** Bridge availability: `online` / `offline`, retained (also the last will). */
  bridgeStatus(): string {
    return `${this.parent}/status`;
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

  outletMeasurement(instanceId: string, deviceId: string, index: number, type: string): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/measurements/${type}`;
  }

  entityMeasurement(instanceId: string, deviceId: string, entityKey: string, type: string): string {
    return `${this.parent}/${instanceId}/${deviceId}/entity/${entityKey}/measurements/${type}`;
  }

  groupMeasurement(instanceId: string, groupKey: string, key: string): string {
    return `${this.parent}/${instanceId}/groups/${groupKey}/measurements/${key}`;
  }

  outletCommand(instanceId: string, deviceId: string, index: number, command: OutletCommand): string {
    return `${this.parent}/${instanceId}/${deviceId}/outlets/${index}/${command}`;
  }

  groupCommand(instanceId: string, groupKey: string): string {
    return `${this.parent}/${instanceId}/groups/${groupKey}/set`;
  }

  /** Subscriptions that receive every command topic of one instance (and nothing it publishes). */
  commandSubscriptions(instanceId: string): string[] {
    return [
      ...OUTLET_COMMANDS.map((c) => `${this.parent}/${instanceId}/+/outlets/+/${c}`),
      `${this.parent}/${instanceId}/groups/+/set`,
    ];
  }

  /** A received topic back to (instance, target, command); refuses anything not exactly a command topic. */
  parseCommand(topic: string): ParsedCommand {
    if (!topic.startsWith(this.#prefix)) return refuse(null, "not under the parent topic");
    const levels = topic.slice(this.#prefix.length).split("/");
    const instanceId = levels[0] ?? "";
    if (levels.some((l) => topicUnsafe(l) !== null)) {
      return refuse(instanceId === "" ? null : instanceId, "empty or wildcard topic level");
    }
    if (levels.length === 4 && levels[1] === "groups" && levels[3] === "set") {
      return { ok: true, instanceId, target: { kind: "group", groupKey: levels[2] ?? "" }, command: "set" };
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
    return refuse(instanceId, "not a command topic");
  }
}

function refuse(instanceId: string | null, reason: string): ParsedCommand {
  return { ok: false, instanceId, reason };
}
