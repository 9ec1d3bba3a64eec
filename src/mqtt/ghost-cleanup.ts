/**
 * Ghost discovery cleanup (docs/mqtt.md, "Ghost cleanup"): once, after the first connect, the
 * retained Home Assistant discovery configs under this bridge's own node ids are read, and each
 * instance's are judged once they are read and the instance's discovery has been published from a
 * polled snapshot: configs it no longer produces are cleared (empty retained payload); the others
 * are left alone. An instance that never polls successfully is never judged.
 *
 * The configs are read in rounds of a few instances: a broker hands a subscription's retained
 * messages to the subscriber's one queue and drops what is over its limit (mosquitto's default
 * `max_queued_messages` is 1000, and a 24-outlet PDU has 177 configs), so each round subscribes to
 * as many instances as {@link ROUND_CONFIGS} holds by the largest instance read so far. A round ends
 * when a marker arrives: a message the sweeper publishes (not retained, on a topic of its own) after
 * the broker acknowledged the round's subscription, which a broker that delivers a client's messages
 * in order (mosquitto) hands over after the round's retained configs. A broker that streams retained
 * messages on their own (aedes) may deliver the marker earlier: after the marker the round waits
 * `settleMs` without a config, and a config of an instance that is still unjudged is collected
 * whenever it comes. A marker that never comes (a broker that does not let the bridge read its own
 * topics) ends the round by quiet time. Reading late or missing a config can only leave a ghost in
 * place; a config the instance still produces is never cleared.
 *
 * Among several replicas (option `onRead`) the reading is per acquisition instead (docs/mqtt.md,
 * "Discovery among several replicas"): nothing is read at connect; {@link GhostSweeper.read} queues
 * the instances of a bucket just taken, the same rounds read their retained configs with a digest
 * of each payload, and each instance's configs go to `onRead` (the publisher then publishes only
 * what is missing or differs and clears what the instance no longer produces) instead of being
 * judged here.
 *
 * Instances that left the configuration: before the first round, a census round reads the retained
 * instance statuses (`<P>/+/status`, which every instance the bridge ever published keeps, `offline`
 * after a clean stop). An instance found `offline` there that is not configured has its retained
 * configs read in the rounds like any other and all of them cleared at once, when
 * {@link RemovedInstances.mayClear} allows (among several replicas: when this replica holds the
 * instance's bucket, so no replica should publish it); one info line per instance says how many. One
 * still `online` is left alone: a process may be publishing it. Its status is left in place, so a
 * config missed now is found at the next start.
 *
 * What is collected is outside input: only well-formed topics of the subscribed shape, and at most
 * {@link MAX_GHOST_TOPICS} of them (and {@link MAX_REMOVED_INSTANCES} instances no longer configured).
 */
import { createHash, randomBytes } from "node:crypto";
import { InstanceIdPattern } from "../config/schema.js";
import { describeError } from "../pdu/errors.js";
import type { Logger } from "../log.js";

/** Retained configs a round of subscriptions should bring at most (below mosquitto's default queue). */
export const ROUND_CONFIGS = 500;
/** Instances in one round at most. */
const ROUND_INSTANCES_MAX = 100;
/** A round's marker is awaited this long (ms) at most; then quiet time ends the rounds. */
export const MARKER_WAIT_MS = 5000;
/** Without a marker, a round ends when no config arrived for this long (ms) ... */
export const GHOST_IDLE_MS = 1000;
/** ... but never later than this (ms) after it began. */
export const ROUND_MAX_MS = 15_000;
/** Collected config topics over every instance at most (about 1,100 PDUs' worth). */
export const MAX_GHOST_TOPICS = 200_000;
/** Instances no longer configured remembered from the census at most. */
export const MAX_REMOVED_INSTANCES = 10_000;
const INSTANCE_ID = new RegExp(InstanceIdPattern);
/** Longest topic collected (ours are far shorter). */
const MAX_TOPIC_CHARS = 1024;
const TICK_MS = 50;
/** Collected configs of an instance joined into one string at a time. */
const JOIN_EVERY = 64;

/** What the sweeper needs of the connection. */
export interface GhostSink {
  publish(topic: string, payload: string, qos: 0 | 1, retain: boolean): boolean;
  /** `noLocal`: the broker does not echo this client's own publishes (MQTT 5; ignored by 3.1.1). */
  subscribeOnce(filters: readonly string[], options?: { readonly noLocal?: boolean }): Promise<string[]>;
  unsubscribe(filters: readonly string[]): Promise<void>;
}

export interface GhostSweeperOptions {
  /** Home Assistant's discovery prefix (`HomeAssistant.DiscoveryTopic`). */
  readonly prefix: string;
  /** node id → instance id, for every configured instance. */
  readonly nodeIds: ReadonlyMap<string, string>;
  readonly sink: GhostSink;
  /** The config topics last published for an instance, null while it has none. */
  readonly current: (instanceId: string) => ReadonlySet<string> | null;
  /** The topic of the sweeper's markers (the bridge's own, nobody else's); a random level is added. */
  readonly markerTopic: string;
  /** After a round's marker, wait this long (ms) without a config (a broker that streams retained messages on their own). */
  readonly settleMs?: number;
  /** Retained configs a round should bring at most (default {@link ROUND_CONFIGS}). */
  readonly roundConfigs?: number;
  readonly logger: Logger;
  readonly now?: () => number;
  /**
   * Read per acquisition ({@link GhostSweeper.read}) and hand each instance's retained configs
   * (config topic → {@link configDigest} of its payload) here instead of judging them; null when
   * they could not be read (then nothing is known of them).
   */
  readonly onRead?: (instanceId: string, configs: ReadonlyMap<string, string> | null) => void;
  /**
   * Clears the configs of instances no longer configured, found by a census of the retained
   * `<parentTopic>/+/status` topics before the first round; absent: no census.
   */
  readonly removed?: RemovedInstances;
}

/** What the sweeper needs to find and clear the configs of instances no longer configured. */
export interface RemovedInstances {
  /** `Mqtt.ParentTopic`: the census reads `<parentTopic>/+/status`. */
  readonly parentTopic: string;
  /** The `node_id` of an instance's configs. */
  nodeIdOf(instanceId: string): string;
  /** Whether this process may clear the instance's configs now (among replicas: it holds its bucket). */
  mayClear(instanceId: string): boolean;
}

/** A short digest of a discovery config's payload (the same for a string and its UTF-8 bytes). */
export function configDigest(payload: string | Buffer): string {
  return createHash("sha256").update(payload).digest("base64url").slice(0, 22);
}

type Phase = "idle" | "reading" | "judging" | "done";

/** One instance's collected configs: `<component>/<object_id>` joined by NUL, {@link JOIN_EVERY} to a string. */
interface Collected {
  readonly joined: string[];
  readonly pending: string[];
  count: number;
  /** Its round ended: it may be judged. */
  read: boolean;
  /** Per acquisition: config topic → digest of its payload. */
  readonly digests: Map<string, string> | null;
  /** An instance no longer configured: every config is cleared once read. */
  readonly removed: boolean;
}

interface Round {
  readonly instances: readonly string[];
  readonly filters: readonly string[];
  readonly startedAt: number;
  lastConfigAt: number;
  /** Its number, the payload of its marker (a late marker of an earlier round ends nothing). */
  readonly seq: number;
  /** When the marker arrived; null before. */
  markerAt: number | null;
  /** The census: it reads the retained instance statuses, not configs. */
  readonly census: boolean;
}

export class GhostSweeper {
  readonly #o: GhostSweeperOptions;
  readonly #now: () => number;
  readonly #prefixLevels: number;
  readonly #marker: string;
  readonly #settleMs: number;
  readonly #roundConfigs: number;
  /** instance id → its node id, for instances whose node id can be a subscription level. */
  readonly #nodeIdOf = new Map<string, string>();
  /** Instances not read yet, in configuration order. */
  readonly #unread: string[] = [];
  /** Collected configs of instances not judged yet. */
  readonly #collected = new Map<string, Collected>();
  #total = 0;
  #capped = false;
  #phase: Phase = "idle";
  #round: Round | null = null;
  /** Most configs one instance held so far (sizes the next round); null before the first, which is one instance. */
  #perInstance: number | null = null;
  /**
   * A round's marker did not come back in {@link MARKER_WAIT_MS}: quiet time ends rounds, until a
   * marker arrives (one held up behind a start's flood of publishes comes back late; a broker that
   * does not let the bridge read its own topic never sends one).
   */
  #markersLost = false;
  /** The loss of markers was logged (once per process). */
  #lossLogged = false;
  /** Rounds ended by quiet time or by their time limit rather than by their marker. */
  #unmarkedRounds = 0;
  /** Rounds begun so far (numbers their markers). */
  #rounds = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Per acquisition: the marker is subscribed on the current connection. */
  #markerReady = false;
  /** Per acquisition: connects seen (a subscription of an earlier connection is gone). */
  #connects = 0;
  /** The census of instance statuses: not begun, read into {@link #censusIds}, or over. */
  #census: "pending" | "reading" | "done";
  /** Instance ids whose status the census round read. */
  readonly #censusIds = new Set<string>();
  /** Instances no longer configured that the census found and that are not queued yet: id → node id. */
  readonly #removed = new Map<string, string>();
  /** Node id → instance id of the instances no longer configured that were queued. */
  readonly #removedNodes = new Map<string, string>();

  constructor(options: GhostSweeperOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#settleMs = options.settleMs ?? 0;
    this.#roundConfigs = options.roundConfigs ?? ROUND_CONFIGS;
    this.#marker = `${options.markerTopic}/${randomBytes(6).toString("hex")}`;
    this.#census = options.removed === undefined ? "done" : "pending";
    // Node ids are built from the parent topic (escaped) and a validated instance id; one that
    // could be a wildcard or span levels is not subscribed.
    for (const [nodeId, instanceId] of options.nodeIds) {
      if (/[+#/]/.test(nodeId)) continue;
      this.#nodeIdOf.set(instanceId, nodeId);
      if (options.onRead === undefined) this.#unread.push(instanceId);
    }
    this.#prefixLevels = options.prefix.split("/").length;
  }

  /**
   * Whether a message belongs to the sweeper: configs under the prefix and its marker while reading,
   * and an instance's status whenever there is a census (a late one is dropped, never a command).
   */
  accepts(topic: string): boolean {
    if (this.#statusId(topic) !== null) return true;
    if (this.#phase !== "reading" && this.#phase !== "judging") return false;
    return topic === this.#marker || (topic.startsWith(`${this.#o.prefix}/`) && topic.endsWith("/config"));
  }

  /**
   * Per acquisition: reads these instances' retained configs (after those queued before) and hands
   * them to `onRead`. After {@link close} or a failure to subscribe, `onRead` gets null at once.
   */
  read(instanceIds: Iterable<string>): void {
    const onRead = this.#o.onRead;
    if (onRead === undefined) return;
    for (const id of instanceIds) {
      if (this.#phase === "done" || !this.#nodeIdOf.has(id)) {
        onRead(id, null);
        continue;
      }
      if (this.#unread.includes(id) || this.#collected.has(id)) continue;
      this.#unread.push(id);
    }
    this.#queueRemoved();
    if (this.#phase === "reading" && this.#markerReady && this.#round === null) this.#startRounds();
  }

  /** After a connect: the first one starts reading (per acquisition: each one subscribes the marker). Never throws. */
  onConnect(): void {
    if (this.#o.onRead !== undefined) {
      this.#connectPerAcquisition();
      return;
    }
    if (this.#phase !== "idle") return;
    if (this.#unread.length === 0 && this.#census === "done") {
      this.#phase = "done";
      return;
    }
    this.#phase = "reading";
    this.#o.sink.subscribeOnce([this.#marker]).then(
      () => {
        this.#timer = setInterval(() => this.#tick(), TICK_MS);
        this.#timer.unref();
        this.#nextRound();
      },
      (error: unknown) => this.#abandon(error),
    );
  }

  #connectPerAcquisition(): void {
    if (this.#phase === "done") return;
    this.#phase = "reading";
    this.#markerReady = false;
    const connect = ++this.#connects;
    // A round under way lost its subscription with the connection: read its instances again.
    const round = this.#round;
    if (round !== null) {
      this.#round = null;
      for (const id of round.instances) this.#collected.delete(id);
      this.#unread.unshift(...round.instances);
      if (round.census) {
        this.#census = "pending";
        this.#censusIds.clear();
      }
    }
    this.#o.sink.subscribeOnce([this.#marker]).then(
      () => {
        if (connect !== this.#connects || this.#phase !== "reading") return;
        this.#markerReady = true;
        if (this.#round === null) this.#startRounds();
      },
      (error: unknown) => this.#abandon(error),
    );
  }

  #startRounds(): void {
    if (this.#unread.length === 0 && this.#census !== "pending") return;
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#tick(), TICK_MS);
      this.#timer.unref();
    }
    this.#nextRound();
  }

  /** A message {@link accepts} took. Never throws. */
  collect(topic: string, payload: Buffer, retained: boolean): void {
    const round = this.#round;
    if (topic === this.#marker) {
      // Any round's marker shows the broker delivers them: the rounds end by markers again.
      this.#markersLost = false;
      if (round === null || round.markerAt !== null || payload.toString("latin1") !== String(round.seq))
        return;
      round.markerAt = this.#now();
      // Nothing to wait for after it (a broker that delivers in order): the next round starts now.
      if (this.#settleMs === 0) this.#tick();
      return;
    }
    // Our own publishes come back live (not retained); an empty payload is already cleared.
    if (!retained || payload.length === 0) return;
    const statusOf = this.#statusId(topic);
    if (statusOf !== null) {
      // Only an instance nobody publishes now: `offline`, as a clean stop leaves it.
      const offline = payload.length <= 16 && payload.toString("latin1").trim().toLowerCase() === "offline";
      if (round?.census === true && offline && this.#censusIds.size < MAX_REMOVED_INSTANCES) {
        this.#censusIds.add(statusOf);
        round.lastConfigAt = this.#now();
      }
      return;
    }
    // MQTT forbids U+0000 in a topic; one that has it anyway is not ours (and would split wrongly).
    if (topic.length > MAX_TOPIC_CHARS || topic.includes("\u0000")) return;
    const levels = topic.split("/");
    if (levels.length !== this.#prefixLevels + 4) return;
    const component = levels[this.#prefixLevels] ?? "";
    const nodeId = levels[this.#prefixLevels + 1] ?? "";
    const objectId = levels[this.#prefixLevels + 2] ?? "";
    const instanceId = this.#o.nodeIds.get(nodeId) ?? this.#removedNodes.get(nodeId);
    if (instanceId === undefined || component === "" || objectId === "") return;
    // Judged already (a late delivery): nothing more to do for it.
    const seen = this.#collected.get(instanceId);
    if (seen === undefined) return;
    if (round !== null) round.lastConfigAt = this.#now();
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
    if (seen.digests !== null) {
      if (!seen.digests.has(topic)) {
        seen.count++;
        this.#total++;
      }
      seen.digests.set(topic, configDigest(payload));
      return;
    }
    seen.pending.push(`${component}/${objectId}`);
    // Joined into one flat string: the parts are slices of the topic, which they would keep alive.
    if (seen.pending.length === JOIN_EVERY) seen.joined.push(seen.pending.splice(0).join("\u0000"));
    seen.count++;
    this.#total++;
  }

  /** An instance's discovery was published from a polled snapshot: judge it if it has been read. */
  discovered(instanceId: string): void {
    if (this.#collected.get(instanceId)?.read === true) this.#judge(instanceId);
  }

  /** Stops reading (on stop). */
  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#phase = "done";
    this.#round = null;
    this.#markerReady = false;
    this.#collected.clear();
    this.#unread.length = 0;
  }

  /** Subscribes to the next round of instances, or ends the reading when none is left. */
  #nextRound(): void {
    if (this.#phase !== "reading") return;
    if (this.#census === "pending") {
      this.#census = "reading";
      const parent = this.#o.removed?.parentTopic ?? "";
      this.#subscribeRound([], [`${parent}/+/status`], true);
      return;
    }
    const size =
      this.#perInstance === null
        ? 1
        : Math.max(1, Math.min(ROUND_INSTANCES_MAX, Math.floor(this.#roundConfigs / this.#perInstance)));
    const instances = this.#unread.splice(0, size);
    if (instances.length === 0) {
      this.#finishReading();
      return;
    }
    const perAcquisition = this.#o.onRead !== undefined;
    for (const id of instances) {
      const removed = !this.#o.nodeIds.has(this.#nodeIdOf.get(id) ?? "");
      this.#collected.set(id, {
        joined: [],
        pending: [],
        count: 0,
        read: false,
        digests: perAcquisition && !removed ? new Map() : null,
        removed,
      });
    }
    const filters = instances.map((id) => `${this.#o.prefix}/+/${this.#nodeIdOf.get(id) ?? ""}/+/config`);
    this.#subscribeRound(instances, filters, false);
  }

  /** Begins a round: subscribes to its filters, then publishes its marker. */
  #subscribeRound(instances: readonly string[], filters: readonly string[], census: boolean): void {
    const now = this.#now();
    const seq = ++this.#rounds;
    const round: Round = {
      instances,
      filters,
      seq,
      startedAt: now,
      lastConfigAt: now,
      markerAt: null,
      census,
    };
    this.#round = round;
    this.#o.sink.subscribeOnce(filters, { noLocal: true }).then(
      () => {
        if (this.#round !== round) return;
        round.lastConfigAt = this.#now();
        // Also while markers are lost: one that comes back ends that loss.
        this.#o.sink.publish(this.#marker, String(round.seq), 1, false);
      },
      (error: unknown) => this.#abandon(error),
    );
  }

  #tick(): void {
    const round = this.#round;
    if (round === null) return;
    const now = this.#now();
    let over: boolean;
    if (round.markerAt !== null) {
      over = now - round.markerAt >= this.#settleMs && now - round.lastConfigAt >= this.#settleMs;
    } else if (!this.#markersLost && now - round.startedAt >= MARKER_WAIT_MS) {
      this.#markersLost = true;
      if (!this.#lossLogged) {
        this.#lossLogged = true;
        this.#o.logger.warn(
          { topic: this.#marker },
          "the broker did not deliver the bridge's own marker topic in time: ghost cleanup reads by quiet time until a marker arrives",
        );
      }
      over = false;
    } else {
      over = this.#markersLost && now - round.lastConfigAt >= GHOST_IDLE_MS;
    }
    if (!over && now - round.startedAt < ROUND_MAX_MS) return;
    if (round.markerAt === null) this.#unmarkedRounds++;
    this.#round = null;
    void this.#o.sink.unsubscribe(round.filters);
    if (round.census) {
      this.#endCensus();
      this.#nextRound();
      return;
    }
    let largest = this.#perInstance ?? 1;
    for (const id of round.instances) {
      const seen = this.#collected.get(id);
      if (seen === undefined) continue;
      seen.read = true;
      largest = Math.max(largest, seen.count);
      if (seen.removed) {
        this.#clearRemoved(id);
      } else if (seen.digests !== null) {
        this.#collected.delete(id);
        this.#total -= seen.count;
        this.#o.onRead?.(id, seen.digests);
      } else {
        this.#judge(id);
      }
    }
    this.#perInstance = largest;
    this.#nextRound();
  }

  #finishReading(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    // Per acquisition the marker stays subscribed for the next bucket taken.
    if (this.#o.onRead !== undefined) return;
    void this.#o.sink.unsubscribe([this.#marker]);
    this.#phase = this.#collected.size === 0 ? "done" : "judging";
    this.#o.logger.debug(
      { rounds: this.#rounds, unmarked: this.#unmarkedRounds, waiting: this.#collected.size },
      "ghost cleanup: the retained discovery configs are read",
    );
  }

  #abandon(error: unknown): void {
    if (this.#phase === "done") return;
    // Per acquisition: what was waiting is published without knowing what is retained.
    const waiting = [...(this.#round?.instances ?? []), ...this.#unread];
    this.close();
    for (const id of waiting) this.#o.onRead?.(id, null);
    this.#o.logger.warn(
      { err: describeError(error) },
      "could not read retained discovery configs: ghost cleanup skipped",
    );
  }

  /**
   * The census is over: the instances it found that are not configured are remembered, and those
   * this process may clear now are queued.
   */
  #endCensus(): void {
    this.#census = "done";
    const removed = this.#o.removed;
    if (removed !== undefined) {
      for (const id of this.#censusIds) {
        const nodeId = removed.nodeIdOf(id);
        // A node id that could be a wildcard or span levels is not subscribed.
        if (this.#o.nodeIds.has(nodeId) || /[+#/]/.test(nodeId)) continue;
        this.#removed.set(id, nodeId);
      }
    }
    this.#censusIds.clear();
    this.#queueRemoved();
  }

  /** Queues the instances no longer configured that this process may clear now (each once). */
  #queueRemoved(): void {
    const removed = this.#o.removed;
    if (removed === undefined) return;
    for (const [id, nodeId] of this.#removed) {
      if (!removed.mayClear(id)) continue;
      this.#removed.delete(id);
      this.#nodeIdOf.set(id, nodeId);
      this.#removedNodes.set(nodeId, id);
      this.#unread.push(id);
    }
  }

  /** Clears every collected config of an instance no longer configured, when it may still be cleared. */
  #clearRemoved(instanceId: string): void {
    const seen = this.#collected.get(instanceId);
    if (seen === undefined) return;
    this.#collected.delete(instanceId);
    this.#total -= seen.count;
    // Its bucket went to another replica meanwhile: that one judges it when it reads the bucket.
    if (this.#o.removed?.mayClear(instanceId) !== true) return;
    const cleared = this.#clear(instanceId, seen, null);
    if (cleared > 0) {
      this.#o.logger.info(
        { instance: instanceId, cleared },
        "cleared the retained discovery configs of an instance that is no longer configured",
      );
    }
  }

  /** Publishes an empty retained payload on each collected config not in `keep`; how many went out. */
  #clear(instanceId: string, seen: Collected, keep: ReadonlySet<string> | null): number {
    // Each config once (a topic is delivered once per subscription, but nothing relies on it).
    const parts = new Set([...seen.joined, ...seen.pending].join("\u0000").split("\u0000"));
    const nodeId = this.#nodeIdOf.get(instanceId) ?? "";
    let cleared = 0;
    for (const part of parts) {
      if (part === "") continue;
      const slash = part.indexOf("/");
      const topic = `${this.#o.prefix}/${part.slice(0, slash)}/${nodeId}/${part.slice(slash + 1)}/config`;
      if (keep?.has(topic) === true) continue;
      if (this.#o.sink.publish(topic, "", 1, true)) cleared++;
    }
    return cleared;
  }

  /** The instance id of `<parentTopic>/<id>/status` when there is a census, else null. */
  #statusId(topic: string): string | null {
    const parent = this.#o.removed?.parentTopic;
    if (parent === undefined || !topic.startsWith(`${parent}/`) || !topic.endsWith("/status")) return null;
    const id = topic.slice(parent.length + 1, -"/status".length);
    return INSTANCE_ID.test(id) ? id : null;
  }

  /** Clears the instance's collected configs that its current discovery does not produce. */
  #judge(instanceId: string): void {
    const seen = this.#collected.get(instanceId);
    if (seen === undefined) return;
    const current = this.#o.current(instanceId);
    // Not polled successfully yet: its configs stay until it is.
    if (current === null) return;
    this.#collected.delete(instanceId);
    this.#total -= seen.count;
    const cleared = this.#clear(instanceId, seen, current);
    if (cleared > 0) {
      this.#o.logger.info(
        { instance: instanceId, cleared },
        "cleared retained discovery configs of things that no longer exist",
      );
    }
    if (this.#phase === "judging" && this.#collected.size === 0) this.#phase = "done";
  }
}
