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
 * Slots live as long as their topics (hours), so they are the biggest thing the bridge keeps per
 * PDU (about 300 per 24-outlet PDU). A slot is therefore no object but an index into the track's
 * columns: its key's fields, the payload and number last published and when. The topic name is not
 * kept either (it was a third of a slot): it is built when something is published on the slot,
 * which at about 55 % changing values costs less than the old generation it would take. Anything a
 * poll replaced in a slot object would be promoted to the old generation and die there, the garbage
 * that decides how far the heap climbs between full collections; a column holds numbers in place.
 *
 * The topic name itself comes from the caller's {@link TopicNames}, which builds it with
 * src/mqtt/topics.ts: this file knows nothing of topic names.
 */
import type { SettingName } from "../control/settings.js";
import type { TopicKey, TopicKind } from "./topics.js";

/** A slot of a track: an index into its columns. */
export type Slot = number;

/** What {@link Track.visit} answers for a key that cannot be a topic. */
export const NO_SLOT: Slot = -1;

/** How a track names its keys' topics. */
export interface TopicNames {
  /** Whether the key can be a topic (its ids can be topic levels); asked once per new slot. */
  accepts(key: TopicKey): boolean;
  /** The topic of a key it accepted. */
  topic(key: TopicKey): string;
}

const NONE: readonly string[] = Object.freeze([]);

/**
 * The columns of a key: `kind`; `a` the device id (the group key of a group measurement); `i` the
 * outlet index; `b` the measurement type, setting, or the group measurement's key; `c` the entity
 * key of an entity measurement. Unused fields hold "" and 0. The strings are kept as numbers into
 * the track's word list ({@link Track.word}): a few dozen distinct words per PDU.
 */
const KINDS: readonly TopicKind[] = [
  "deviceState",
  "deviceAlarm",
  "outletState",
  "outletLabel",
  "outletSetting",
  "outletMeasurement",
  "entityMeasurement",
  "groupMeasurement",
];
const KIND_CODE = new Map(KINDS.map((kind, code) => [kind, code + 1]));

// A slot's places in the interleaved columns of a track (see Track.#ints).
const A = 0;
const B = 1;
const C = 2;
const I = 3;
const SEEN = 4;
const INTS = 5;
const KIND = 0;
const SENT = 1;
const BYTES = 2;
const NUM = 0;
const AT = 1;
const NUMS = 2;

function a(key: TopicKey): string {
  return key.kind === "groupMeasurement" ? key.groupKey : key.deviceId;
}

function b(key: TopicKey): string {
  switch (key.kind) {
    case "outletSetting":
      return key.setting;
    case "outletMeasurement":
    case "entityMeasurement":
      return key.type;
    case "groupMeasurement":
      return key.key;
    default:
      return "";
  }
}

export class Track {
  readonly #names: TopicNames;
  /** Slots visited by the last walk, in its order: every topic remembered, once (`#length` used). */
  #order = new Int32Array(32);
  #length = 0;
  /**
   * The slots of the previous walk by topic, built only when a walk leaves its order (a shape
   * change) and dropped at its end.
   */
  #byTopic: Map<string, Slot> | null = null;
  #pos = 0;
  #walk = 0;
  /**
   * The columns, by slot, interleaved in three typed arrays (a typed array and its buffer weigh
   * about 250 bytes of their own, and a PDU has two tracks): per slot {@link INTS} numbers in
   * `#ints` (the key's strings as word numbers, the outlet index, the last walk that visited it),
   * {@link BYTES} in `#bytes` (the kind as its place in KINDS plus one, 0 free; 1 once anything was
   * published) and {@link NUMS} in `#nums` (the number last published, NaN until then, and when,
   * epoch ms). Slots beyond `#next` are room to grow into, trimmed after a walk that made slots.
   */
  #ints = new Int32Array(32 * INTS);
  #bytes = new Uint8Array(32 * BYTES);
  #nums = new Float64Array(32 * NUMS);
  /** Slots the columns have room for. */
  #capacity = 32;
  /** A walk made slots: the columns are trimmed at its end. */
  #grew = false;
  /**
   * The words of the keys (ids, types, settings), each once. Searched only when a slot is made, so
   * no map: a map per track weighed more than the words.
   */
  #words: string[] = [""];
  /** Last text payload published (retained topics, device state and alarm, group rollups), else null. */
  #payload: (string | null)[] = [];
  /** Slots free for reuse (forgotten), and the next never used. */
  readonly #free: Slot[] = [];
  #next = 0;

  constructor(names: TopicNames) {
    this.#names = names;
  }

  /** Topics remembered. */
  get size(): number {
    return this.#length;
  }

  /** The key of a slot (a new object). */
  key(slot: Slot): TopicKey {
    const kind = KINDS[this.#bytes[slot * BYTES + KIND]! - 1]!;
    const words = this.#words;
    const at = slot * INTS;
    const deviceId = words[this.#ints[at + A]!]!;
    const index = this.#ints[at + I]!;
    const b = words[this.#ints[at + B]!]!;
    switch (kind) {
      case "deviceState":
      case "deviceAlarm":
        return { kind, deviceId };
      case "outletState":
      case "outletLabel":
        return { kind, deviceId, index };
      case "outletSetting":
        return { kind, deviceId, index, setting: b as SettingName };
      case "outletMeasurement":
        return { kind, deviceId, index, type: b };
      case "entityMeasurement":
        return { kind, deviceId, entityKey: words[this.#ints[at + C]!]!, type: b };
      case "groupMeasurement":
        return { kind, groupKey: deviceId, key: b };
    }
  }

  /** The topic of a slot, built now. */
  topic(slot: Slot): string {
    return this.#names.topic(this.key(slot));
  }

  /** The text payload last published on the slot (null for none or a number). */
  payload(slot: Slot): string | null {
    return this.#payload[slot]!;
  }

  /** Whether anything was published on the slot yet. */
  sent(slot: Slot): boolean {
    return this.#bytes[slot * BYTES + SENT] === 1;
  }

  /** The number last published on a measurement's slot; NaN before the first. */
  num(slot: Slot): number {
    return this.#nums[slot * NUMS + NUM]!;
  }

  /** When the slot was last published (epoch ms); 0 before the first. */
  at(slot: Slot): number {
    return this.#nums[slot * NUMS + AT]!;
  }

  /** Records a publish on the slot at `at`: `num` for a measurement, else the text `payload`. */
  published(slot: Slot, at: number, num = NaN, payload: string | null = null): void {
    this.#bytes[slot * BYTES + SENT] = 1;
    this.#nums[slot * NUMS + AT] = at;
    this.#nums[slot * NUMS + NUM] = num;
    this.#payload[slot] = payload;
  }

  /** Starts a walk. */
  begin(): void {
    this.#pos = 0;
    // Never 0, the mark of a slot no walk visited yet.
    this.#walk = this.#walk === 0x7fff_ffff ? 1 : this.#walk + 1;
    this.#byTopic = null;
  }

  /**
   * The slot of `key`, created (nothing sent yet) when it is new; {@link NO_SLOT} when the thing
   * cannot have a topic: it then takes no position in the walk. The caller may reuse `key` for the
   * next visit (the walk fills one object per kind): the track copies its fields.
   */
  visit(key: TopicKey): Slot {
    const pos = this.#pos;
    let slot = pos < this.#length ? this.#order[pos]! : NO_SLOT;
    if (slot === NO_SLOT || !this.#same(slot, key)) {
      if (!this.#names.accepts(key)) return NO_SLOT;
      const topic = this.#names.topic(key);
      const byTopic = (this.#byTopic ??= this.#mapByTopic());
      slot = byTopic.get(topic) ?? NO_SLOT;
      if (slot === NO_SLOT) {
        slot = this.#create(key);
        byTopic.set(topic, slot);
      }
      if (pos === this.#order.length) this.#order = resized(this.#order, Math.ceil(pos * 1.25));
      this.#order[pos] = slot;
      if (pos === this.#length) this.#length++;
    }
    this.#ints[slot * INTS + SEEN] = this.#walk;
    this.#pos = pos + 1;
    return slot;
  }

  /** Whether the slot holds `key`. */
  #same(slot: Slot, key: TopicKey): boolean {
    if (KINDS[this.#bytes[slot * BYTES + KIND]! - 1] !== key.kind) return false;
    const words = this.#words;
    const ints = this.#ints;
    const at = slot * INTS;
    switch (key.kind) {
      case "deviceState":
      case "deviceAlarm":
        return words[ints[at + A]!] === key.deviceId;
      case "outletState":
      case "outletLabel":
        return ints[at + I] === key.index && words[ints[at + A]!] === key.deviceId;
      case "outletSetting":
        return (
          ints[at + I] === key.index &&
          words[ints[at + B]!] === key.setting &&
          words[ints[at + A]!] === key.deviceId
        );
      case "outletMeasurement":
        return (
          ints[at + I] === key.index &&
          words[ints[at + B]!] === key.type &&
          words[ints[at + A]!] === key.deviceId
        );
      case "entityMeasurement":
        return (
          words[ints[at + B]!] === key.type &&
          words[ints[at + C]!] === key.entityKey &&
          words[ints[at + A]!] === key.deviceId
        );
      case "groupMeasurement":
        return words[ints[at + B]!] === key.key && words[ints[at + A]!] === key.groupKey;
    }
  }

  /**
   * The number of a word, added when new. Words of forgotten slots stay until the list holds more
   * than twice the words in use plus a margin, when it is rebuilt: a PDU that invents new ids poll
   * after poll cannot grow it without bound.
   */
  #word(word: string): number {
    const n = this.#words.indexOf(word);
    if (n >= 0) return n;
    if (this.#words.length > 2 * 3 * this.#next + 64) this.#rebuildWords();
    return this.#intern(word);
  }

  #intern(word: string): number {
    const n = this.#words.indexOf(word);
    return n >= 0 ? n : this.#words.push(word) - 1;
  }

  /** Keeps only the words of slots in use, renumbered. */
  #rebuildWords(): void {
    const old = this.#words;
    this.#words = [""];
    const ints = this.#ints;
    for (let slot = 0; slot < this.#next; slot++) {
      if (this.#bytes[slot * BYTES + KIND] === 0) continue;
      const at = slot * INTS;
      ints[at + A] = this.#intern(old[ints[at + A]!]!);
      ints[at + B] = this.#intern(old[ints[at + B]!]!);
      ints[at + C] = this.#intern(old[ints[at + C]!]!);
    }
  }

  /** Words in the list (for tests: it stays bounded). */
  get words(): number {
    return this.#words.length;
  }

  #mapByTopic(): Map<string, Slot> {
    const map = new Map<string, Slot>();
    for (let p = 0; p < this.#length; p++) map.set(this.topic(this.#order[p]!), this.#order[p]!);
    return map;
  }

  /** A new slot holding `key`, nothing sent. */
  #create(key: TopicKey): Slot {
    const slot = this.#free.pop() ?? this.#next++;
    if (slot >= this.#capacity) this.#resize(Math.ceil(this.#capacity * 1.25));
    this.#grew = true;
    const at = slot * INTS;
    // In use (kind set, words "") before the words are looked up: a lookup may rebuild the word
    // list, which renumbers the words of every slot in use, this one's written so far too.
    this.#bytes[slot * BYTES + KIND] = KIND_CODE.get(key.kind)!;
    this.#bytes[slot * BYTES + SENT] = 0;
    this.#ints[at + A] = this.#ints[at + B] = this.#ints[at + C] = 0;
    this.#ints[at + A] = this.#word(a(key));
    this.#ints[at + B] = this.#word(b(key));
    this.#ints[at + C] = this.#word(key.kind === "entityMeasurement" ? key.entityKey : "");
    this.#ints[at + I] = "index" in key ? key.index : 0;
    this.#ints[at + SEEN] = 0;
    this.#nums[slot * NUMS + NUM] = NaN;
    this.#nums[slot * NUMS + AT] = 0;
    this.#payload[slot] = null;
    return slot;
  }

  /** Room for `capacity` slots (at least the slots made so far). */
  #resize(capacity: number): void {
    this.#ints = resized(this.#ints, capacity * INTS);
    this.#bytes = resized(this.#bytes, capacity * BYTES);
    this.#nums = resized(this.#nums, capacity * NUMS);
    this.#capacity = capacity;
  }

  /** Ends a walk: forgets the slots it did not visit and returns their topics. */
  end(): readonly string[] {
    const byTopic = this.#byTopic;
    this.#byTopic = null;
    // A PDU's topics stop growing after its first walk: no room kept past the slots made.
    const grew = this.#grew;
    if (grew) {
      this.#grew = false;
      if (this.#capacity > this.#next) this.#resize(Math.max(this.#next, 1));
    }
    if (byTopic === null && this.#pos === this.#length) {
      if (grew) this.#trimOrder();
      return NONE;
    }
    const walk = this.#walk;
    // In order: the walk visited the slots before #pos, the rest are gone. Out of order: any slot
    // of the previous walk or this one may be gone; the map holds them all.
    const gone: string[] = [];
    if (byTopic === null) {
      for (let p = this.#pos; p < this.#length; p++) gone.push(this.#forget(this.#order[p]!));
    } else {
      for (const [topic, slot] of byTopic) {
        if (this.#ints[slot * INTS + SEEN] === walk) continue;
        this.#forget(slot);
        gone.push(topic);
      }
    }
    this.#length = this.#pos;
    if (grew) this.#trimOrder();
    return gone;
  }

  #trimOrder(): void {
    if (this.#order.length > this.#length) this.#order = resized(this.#order, Math.max(this.#length, 1));
  }

  /** Frees a slot (its strings too); returns its topic. */
  #forget(slot: Slot): string {
    const topic = this.topic(slot);
    const at = slot * INTS;
    this.#bytes[slot * BYTES + KIND] = 0;
    this.#ints[at + A] = this.#ints[at + B] = this.#ints[at + C] = 0;
    this.#payload[slot] = null;
    this.#free.push(slot);
    return topic;
  }
}

/** A column of another length, its values kept as far as they fit. */
function resized<T extends Int32Array | Uint8Array | Float64Array>(column: T, length: number): T {
  const other = new (column.constructor as new (length: number) => T)(length);
  other.set(column.length <= length ? column : column.subarray(0, length));
  return other;
}
