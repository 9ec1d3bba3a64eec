/**
 * Ghost discovery cleanup (docs/mqtt.md, "Ghost cleanup"): once, after the first connect, the
 * retained Home Assistant discovery configs under this bridge's own node ids are collected for a short
 * window, and each instance's are judged as soon as the window is over and the instance's discovery
 * has been published from a polled snapshot: configs it no longer produces are cleared (empty
 * retained payload); the others are left alone. An instance that never polls successfully is never
 * judged. What is collected is outside input: only well-formed topics of the subscribed shape, and at
 * most {@link MAX_GHOST_TOPICS} of them.
 */
import { describeError } from "../pdu/errors.js";
import type { Logger } from "../log.js";

/** Retained configs arrive right after the subscription; collect at least this long after it. */
export const GHOST_WINDOW_MS = 2000;
/** ... and until none arrived for this long (a large fleet's configs take a while) ... */
export const GHOST_IDLE_MS = 1000;
/** ... but never longer than this. */
export const GHOST_WINDOW_MAX_MS = 15_000;
/** Collected config topics over every instance at most (about 1,100 PDUs' worth). */
export const MAX_GHOST_TOPICS = 200_000;
/** Longest topic collected (ours are far shorter). */
const MAX_TOPIC_CHARS = 1024;
const TICK_MS = 250;
/** Collected configs of an instance joined into one string at a time. */
const JOIN_EVERY = 64;

/** What the sweeper needs of the connection. */
export interface GhostSink {
  publish(topic: string, payload: string, qos: 0 | 1, retain: boolean): boolean;
  subscribeOnce(filters: readonly string[]): Promise<string[]>;
  unsubscribe(filters: readonly string[]): void;
}

export interface GhostSweeperOptions {
  /** Home Assistant's discovery prefix (`HomeAssistant.DiscoveryTopic`). */
  readonly prefix: string;
  /** node id → instance id, for every configured instance. */
  readonly nodeIds: ReadonlyMap<string, string>;
  readonly sink: GhostSink;
  /** The config topics last published for an instance, null while it has none. */
  readonly current: (instanceId: string) => ReadonlySet<string> | null;
  readonly logger: Logger;
  readonly now?: () => number;
}

type Phase = "idle" | "collecting" | "judging" | "done";

export class GhostSweeper {
  readonly #o: GhostSweeperOptions;
  readonly #now: () => number;
  readonly #filters: string[];
  readonly #prefixLevels: number;
  /** instance id → its node id. */
  readonly #nodeIdOf = new Map<string, string>();
  /**
   * Retained configs seen, per instance, until the instance is judged: only their `<component>/
   * <object_id>` (the rest of the topic is the instance's), joined by NUL in strings of
   * {@link JOIN_EVERY}. A fleet restarting under its own configs collects about 180 of them per
   * 24-outlet PDU: as one string and one set entry each they were 18 MB at 1000 PDUs, on top of the
   * start's first polls and discovery; this way they take their characters.
   */
  readonly #collected = new Map<string, { joined: string[]; pending: string[] }>();
  #total = 0;
  #capped = false;
  #phase: Phase = "idle";
  #startedAt = 0;
  #lastMessageAt = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(options: GhostSweeperOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    // Node ids are built from the parent topic (escaped) and a validated instance id; one that
    // could be a wildcard or span levels is not subscribed.
    this.#filters = [...options.nodeIds.keys()]
      .filter((nodeId) => !/[+#/]/.test(nodeId))
      .map((nodeId) => `${options.prefix}/+/${nodeId}/+/config`);
    for (const [nodeId, instanceId] of options.nodeIds) this.#nodeIdOf.set(instanceId, nodeId);
    this.#prefixLevels = options.prefix.split("/").length;
  }

  /** The filters collected from (one per instance). */
  get filters(): readonly string[] {
    return this.#filters;
  }

  /** Whether a message belongs to the sweeper (it takes every message under the prefix while active). */
  accepts(topic: string): boolean {
    return (
      (this.#phase === "collecting" || this.#phase === "judging") &&
      topic.startsWith(`${this.#o.prefix}/`) &&
      topic.endsWith("/config")
    );
  }

  /** After a connect: the first one starts the collection. Never throws. */
  onConnect(): void {
    if (this.#phase !== "idle") return;
    if (this.#filters.length === 0) {
      this.#phase = "done";
      return;
    }
    this.#phase = "collecting";
    this.#o.sink.subscribeOnce(this.#filters).then(
      () => {
        this.#startedAt = this.#now();
        this.#lastMessageAt = this.#startedAt;
        this.#timer = setInterval(() => this.#tick(), TICK_MS);
        this.#timer.unref();
      },
      (error: unknown) => {
        this.#phase = "done";
        this.#collected.clear();
        this.#o.logger.warn(
          { err: describeError(error) },
          "could not read retained discovery configs: ghost cleanup skipped",
        );
      },
    );
  }

  /** A message on one of the filters. Never throws. */
  collect(topic: string, payload: Buffer, retained: boolean): void {
    // Our own publishes come back live (not retained); an empty payload is already cleared.
    if (this.#phase !== "collecting" || !retained || payload.length === 0) return;
    this.#lastMessageAt = this.#now();
    // MQTT forbids U+0000 in a topic; one that has it anyway is not ours (and would split wrongly).
    if (topic.length > MAX_TOPIC_CHARS || topic.includes("\u0000")) return;
    const levels = topic.split("/");
    if (levels.length !== this.#prefixLevels + 4) return;
    const component = levels[this.#prefixLevels] ?? "";
    const nodeId = levels[this.#prefixLevels + 1] ?? "";
    const objectId = levels[this.#prefixLevels + 2] ?? "";
    const instanceId = this.#o.nodeIds.get(nodeId);
    if (instanceId === undefined || component === "" || objectId === "") return;
    if (this.#total >= MAX_GHOST_TOPICS) {
      if (!this.#capped) {
        this.#capped = true;
        this.#o.logger.warn(
          { max: MAX_GHOST_TOPICS },
          "too many retained discovery configs to check for ghosts: the rest is left alone",
        );
      }
      return;
    }
    let seen = this.#collected.get(instanceId);
    if (seen === undefined) {
      seen = { joined: [], pending: [] };
      this.#collected.set(instanceId, seen);
    }
    seen.pending.push(`${component}/${objectId}`);
    // Joined into one flat string: the parts are slices of the topic, which they would keep alive.
    if (seen.pending.length === JOIN_EVERY) seen.joined.push(seen.pending.splice(0).join("\u0000"));
    this.#total++;
  }

  /** An instance's discovery was published from a polled snapshot: judge it if the window is over. */
  discovered(instanceId: string): void {
    if (this.#phase === "judging") this.#judge(instanceId);
  }

  /** Stops the window timer (on stop). */
  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#phase = "done";
    this.#collected.clear();
  }

  #tick(): void {
    const now = this.#now();
    const quiet = now - this.#startedAt >= GHOST_WINDOW_MS && now - this.#lastMessageAt >= GHOST_IDLE_MS;
    if (!quiet && now - this.#startedAt < GHOST_WINDOW_MAX_MS) return;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#phase = "judging";
    this.#o.sink.unsubscribe(this.#filters);
    for (const instanceId of [...this.#collected.keys()]) this.#judge(instanceId);
    if (this.#collected.size === 0) this.#phase = "done";
  }

  /** Clears the instance's collected configs that its current discovery does not produce. */
  #judge(instanceId: string): void {
    const seen = this.#collected.get(instanceId);
    if (seen === undefined) return;
    const current = this.#o.current(instanceId);
    // Not polled successfully yet: its configs stay until it is.
    if (current === null) return;
    this.#collected.delete(instanceId);
    // Each config once (a topic is delivered once per subscription, but nothing relies on it).
    const parts = new Set([...seen.joined, ...seen.pending].join("\u0000").split("\u0000"));
    this.#total -= seen.pending.length + seen.joined.length * JOIN_EVERY;
    const nodeId = this.#nodeIdOf.get(instanceId) ?? "";
    let cleared = 0;
    for (const part of parts) {
      const slash = part.indexOf("/");
      const topic = `${this.#o.prefix}/${part.slice(0, slash)}/${nodeId}/${part.slice(slash + 1)}/config`;
      if (current.has(topic)) continue;
      if (this.#o.sink.publish(topic, "", 1, true)) cleared++;
    }
    if (cleared > 0) {
      this.#o.logger.info(
        { instance: instanceId, cleared },
        "cleared retained discovery configs of things that no longer exist",
      );
    }
    if (this.#collected.size === 0) this.#phase = "done";
  }
}
