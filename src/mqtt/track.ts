/**
 * The topics one instance publishes, remembered in the order the publisher's walk visits them, so
 * that a poll of an unchanged shape reaches each topic's state without building its name.
 *
 * Building the topic string of every measurement (about 200 per 24-outlet PDU, each poll) and
 * hashing it into a Map would be the publisher's biggest cost at 1000 PDUs (npm run bench, fleet).
 * A PDU reports the same devices, outlets and measurement types in the same order poll after poll,
 * so the walk asks for "the slot of this {@link TopicKey}" and the track answers with the slot at the
 * same position as last time when its key is the same: a few comparisons, no string built. When the
 * shape changed (something appeared, went away or moved), it falls back to the topic name, and
 * {@link Track.end} reports what was not visited.
 *
 * The topic name itself comes from the caller's {@link TopicOf}, which builds it with
 * src/mqtt/topics.ts: this file knows nothing of topic names.
 */
import { sameTopicKey, type TopicKey } from "./topics.js";

/**
 * One topic and what was last sent on it. Slots live as long as their topic (hours), so a poll puts
 * no new object into them: a measurement's number and the time of the last send are kept in the
 * track's typed arrays (at {@link Slot.index}), and the string sent is made when publishing and dies
 * young. Anything a poll replaced in a slot would be promoted to the old generation and die there,
 * the garbage that decides how far the heap climbs between full collections.
 */
export interface Slot {
  readonly topic: string;
  /** What the topic is for, compared instead of the topic name (the track's own copy). */
  readonly key: TopicKey;
  /** Last text payload published (retained topics, device state and alarm, group rollups); null otherwise. */
  payload: string | null;
  /** Whether anything was published on the topic yet. */
  sent: boolean;
  /** Number of the last walk that visited this slot. */
  seen: number;
  /** Where the slot's number and send time are in its track ({@link Track.num}, {@link Track.at}). */
  readonly index: number;
}

/** The topic of a key, or null when it cannot be one (an id that is no topic level). */
export type TopicOf = (key: TopicKey) => string | null;

const NONE: readonly Slot[] = Object.freeze([]);

export class Track {
  readonly #topicOf: TopicOf;
  /** The slots visited by the last walk, in its order: every topic remembered, once. */
  readonly #order: Slot[] = [];
  /**
   * The slots of the previous walk by topic, built only when a walk leaves its order (a shape
   * change) and dropped at its end: kept for good it was a seventh of the heap per PDU.
   */
  #byTopic: Map<string, Slot> | null = null;
  #pos = 0;
  #walk = 0;
  /** By slot index: the number last published (NaN until then), and when (epoch ms). */
  #nums = new Float64Array(32);
  #ats = new Float64Array(32);
  /** Slot indexes free for reuse (their slots were forgotten), and the next never used. */
  readonly #free: number[] = [];
  #next = 0;

  constructor(topicOf: TopicOf) {
    this.#topicOf = topicOf;
  }

  /** Topics remembered. */
  get size(): number {
    return this.#order.length;
  }

  /** The number last published on a measurement's slot; NaN before the first. */
  num(slot: Slot): number {
    return this.#nums[slot.index]!;
  }

  /** When the slot was last published (epoch ms); 0 before the first. */
  at(slot: Slot): number {
    return this.#ats[slot.index]!;
  }

  /** Records a publish on the slot at `at`, of `num` for a measurement (NaN for text). */
  published(slot: Slot, at: number, num = NaN): void {
    slot.sent = true;
    this.#ats[slot.index] = at;
    this.#nums[slot.index] = num;
  }

  /** Starts a walk. */
  begin(): void {
    this.#pos = 0;
    this.#walk++;
    this.#byTopic = null;
  }

  /**
   * The slot of `key`, created (nothing sent yet) when it is new. Null when the thing cannot have a
   * topic: it then takes no position in the walk. The caller may reuse `key` for the next visit (the
   * walk fills one object per kind): a new slot keeps a copy.
   */
  visit(key: TopicKey): Slot | null {
    const pos = this.#pos;
    let slot = this.#order[pos];
    if (slot === undefined || !sameTopicKey(slot.key, key)) {
      const topic = this.#topicOf(key);
      if (topic === null) return null;
      const byTopic = (this.#byTopic ??= new Map(this.#order.map((s) => [s.topic, s])));
      slot = byTopic.get(topic);
      if (slot === undefined) {
        slot = { topic, key: { ...key }, payload: null, sent: false, seen: 0, index: this.#index() };
        byTopic.set(topic, slot);
      }
      this.#order[pos] = slot;
    }
    slot.seen = this.#walk;
    this.#pos = pos + 1;
    return slot;
  }

  /** A free slot index, its number and time reset. */
  #index(): number {
    const index = this.#free.pop() ?? this.#next++;
    if (index >= this.#nums.length) {
      // By a quarter: a PDU's topics stop growing after its first walk, and what is not used stays.
      const length = Math.ceil(this.#nums.length * 1.25);
      const nums = new Float64Array(length);
      const ats = new Float64Array(length);
      nums.set(this.#nums);
      ats.set(this.#ats);
      this.#nums = nums;
      this.#ats = ats;
    }
    this.#nums[index] = NaN;
    this.#ats[index] = 0;
    return index;
  }

  /** Ends a walk: forgets the slots it did not visit and returns them. */
  end(): readonly Slot[] {
    const order = this.#order;
    const byTopic = this.#byTopic;
    this.#byTopic = null;
    if (byTopic === null && this.#pos === order.length) return NONE;
    const walk = this.#walk;
    // In order: the walk visited the slots before #pos, the rest are gone. Out of order: any slot
    // of the previous walk or this one may be gone; the map holds them all.
    const gone =
      byTopic === null ? order.slice(this.#pos) : [...byTopic.values()].filter((slot) => slot.seen !== walk);
    order.length = this.#pos;
    for (const slot of gone) this.#free.push(slot.index);
    return gone;
  }
}
