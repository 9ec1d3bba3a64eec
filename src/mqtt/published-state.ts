/**
 * What one instance published on each of its topics, remembered in the order the publisher's walk
 * visits them, so that a poll of an unchanged shape reaches each topic's state without building its
 * name.
 *
 * A PDU reports the same devices, outlets and measurement types in the same order poll after poll,
 * so the walk asks for "the slot of this {@link TopicKey}" and the track answers with the slot at the
 * same position as last time when its key is the same: a few comparisons, no string built, no map
 * lookup. When the shape changed (something appeared, went away or moved), it falls back to the
 * topic name, and {@link Track.end} reports what was not visited.
 *
 * Slots live as long as their topics (hours), so they are the biggest thing the bridge keeps per PDU
 * (about 300 per 24-outlet PDU). A slot is therefore no object but an index into the track's
 * columns, typed arrays that hold each slot's fields in place: whatever a poll stored in an object
 * would outlive the young generation and die in the old one. The topic name is not kept either: it
 * is built when something is published on the slot. docs/heap-breakdown.md has the measurements.
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

/** The kinds of key, by code: a slot stores its kind as its place here plus one (0: a free slot). */
const KINDS = [
  "deviceState",
  "deviceAlarm",
  "outletState",
  "outletLabel",
  "outletSetting",
  "outletMeasurement",
  "entityMeasurement",
  "groupMeasurement",
] as const satisfies readonly TopicKind[];
// A kind missing from the list above (it would be stored as a free slot) fails to compile here.
const _everyKindListed: Record<Exclude<TopicKind, (typeof KINDS)[number]>, never> = {};
void _everyKindListed;
const CODE_OF_KIND = new Map(KINDS.map((kind, code) => [kind, code + 1]));

// A slot's fields in the track's columns: field `F` of slot `s` is at `s * <FIELDS> + F` of its
// column. A key's strings are stored as numbers into the track's word list (`#words`); a field a
// kind does not use holds the word "" (0) or the index 0.

/** The `Int32Array` column (`#ints`): the key's strings and outlet index, and the last walk's mark. */
const ID_WORD = 0; // the device id; the group key of a group measurement
const DETAIL_WORD = 1; // the measurement type, the setting, or a group measurement's key
const ENTITY_WORD = 2; // the entity key of an entity measurement
const OUTLET_INDEX = 3;
const LAST_WALK = 4; // the number of the last walk that visited the slot (0: none yet)
const INT_FIELDS = 5;
/** The `Uint8Array` column (`#bytes`). */
const KIND_CODE = 0; // the key's kind (see KINDS); 0: the slot is free
const PUBLISHED = 1; // 1 once anything was published on the slot, else 0
const BYTE_FIELDS = 2;
/** The `Float64Array` column (`#nums`). */
const LAST_NUMBER = 0; // the number last published on a measurement's slot; NaN: none
const LAST_PUBLISHED_AT = 1; // when the slot was last published (epoch ms); 0: never
const NUMBER_FIELDS = 2;

/** The key's first id: its device id, or the group key of a group measurement. */
function idOf(key: TopicKey): string {
  return key.kind === "groupMeasurement" ? key.groupKey : key.deviceId;
}

/** What the key names within its device or group: a type, a setting or a key; "" when nothing. */
function detailOf(key: TopicKey): string {
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
  /** The walk's position in `#order`. */
  #position = 0;
  /** The number of the walk under way, never 0 (the mark of a slot no walk visited). */
  #walk = 0;
  /**
   * The columns, by slot, interleaved (a typed array and its buffer weigh about 250 bytes of their
   * own, and a PDU has two tracks): {@link INT_FIELDS}, {@link BYTE_FIELDS} and
   * {@link NUMBER_FIELDS} per slot, named above. Slots beyond `#next` are room to grow into, given
   * back after a walk that made slots.
   */
  #ints = new Int32Array(32 * INT_FIELDS);
  #bytes = new Uint8Array(32 * BYTE_FIELDS);
  #nums = new Float64Array(32 * NUMBER_FIELDS);
  /** Slots the columns have room for. */
  #capacity = 32;
  /** A walk made slots: the columns are trimmed at its end. */
  #grew = false;
  /**
   * The words of the keys (ids, types, settings), each once. Searched only when a slot is made, so
   * no map: a map per track weighs more than the words.
   */
  #words: string[] = [""];
  /** The text last published on each slot (retained topics, device state and alarm, group rollups), else null. */
  #texts: (string | null)[] = [];
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
    const kind = KINDS[this.#bytes[slot * BYTE_FIELDS + KIND_CODE]! - 1]!;
    const fields = slot * INT_FIELDS;
    const id = this.#wordAt(fields + ID_WORD);
    const index = this.#ints[fields + OUTLET_INDEX]!;
    const detail = this.#wordAt(fields + DETAIL_WORD);
    switch (kind) {
      case "deviceState":
      case "deviceAlarm":
        return { kind, deviceId: id };
      case "outletState":
      case "outletLabel":
        return { kind, deviceId: id, index };
      case "outletSetting":
        return { kind, deviceId: id, index, setting: detail as SettingName };
      case "outletMeasurement":
        return { kind, deviceId: id, index, type: detail };
      case "entityMeasurement":
        return { kind, deviceId: id, entityKey: this.#wordAt(fields + ENTITY_WORD), type: detail };
      case "groupMeasurement":
        return { kind, groupKey: id, key: detail };
    }
  }

  /** The topic of a slot, built now. */
  topic(slot: Slot): string {
    return this.#names.topic(this.key(slot));
  }

  /** Whether anything was published on the slot yet. */
  isPublished(slot: Slot): boolean {
    return this.#bytes[slot * BYTE_FIELDS + PUBLISHED] === 1;
  }

  /** The text last published on the slot; null when none was (nothing yet, or a measurement's slot). */
  lastText(slot: Slot): string | null {
    return this.#texts[slot]!;
  }

  /** The number last published on a measurement's slot; NaN when none was. */
  lastNumber(slot: Slot): number {
    return this.#nums[slot * NUMBER_FIELDS + LAST_NUMBER]!;
  }

  /** When the slot was last published (epoch ms); 0 when it never was. */
  lastPublishedAt(slot: Slot): number {
    return this.#nums[slot * NUMBER_FIELDS + LAST_PUBLISHED_AT]!;
  }

  /** Records that `text` was published on the slot at `at` (epoch ms). */
  recordText(slot: Slot, at: number, text: string): void {
    this.#bytes[slot * BYTE_FIELDS + PUBLISHED] = 1;
    this.#nums[slot * NUMBER_FIELDS + LAST_PUBLISHED_AT] = at;
    this.#texts[slot] = text;
  }

  /** Records that a measurement's `value` was published on the slot at `at` (epoch ms). */
  recordNumber(slot: Slot, at: number, value: number): void {
    this.#bytes[slot * BYTE_FIELDS + PUBLISHED] = 1;
    this.#nums[slot * NUMBER_FIELDS + LAST_PUBLISHED_AT] = at;
    this.#nums[slot * NUMBER_FIELDS + LAST_NUMBER] = value;
  }

  /** Starts a walk. */
  begin(): void {
    this.#position = 0;
    this.#walk = this.#walk === 0x7fff_ffff ? 1 : this.#walk + 1;
    this.#byTopic = null;
  }

  /**
   * The slot of `key`, created (nothing published yet) when it is new; {@link NO_SLOT} when the
   * thing cannot have a topic: it then takes no position in the walk. The caller may reuse `key` for
   * the next visit (the walk fills one object per kind): the track copies its fields.
   */
  visit(key: TopicKey): Slot {
    const position = this.#position;
    let slot = position < this.#length ? this.#order[position]! : NO_SLOT;
    if (slot === NO_SLOT || !this.#holds(slot, key)) {
      if (!this.#names.accepts(key)) return NO_SLOT;
      slot = this.#slotByTopic(key);
      if (position === this.#order.length) {
        this.#order = resized(this.#order, Math.ceil(position * 1.25));
      }
      this.#order[position] = slot;
      if (position === this.#length) this.#length++;
    }
    this.#ints[slot * INT_FIELDS + LAST_WALK] = this.#walk;
    this.#position = position + 1;
    return slot;
  }

  /** Off the previous walk's order: the slot of the key's topic, made when there is none. */
  #slotByTopic(key: TopicKey): Slot {
    const topic = this.#names.topic(key);
    const byTopic = (this.#byTopic ??= this.#mapByTopic());
    let slot = byTopic.get(topic);
    if (slot === undefined) {
      slot = this.#create(key);
      byTopic.set(topic, slot);
    }
    return slot;
  }

  /** Whether the slot holds `key` (the walk's hot comparison: the cheapest fields first). */
  #holds(slot: Slot, key: TopicKey): boolean {
    if (KINDS[this.#bytes[slot * BYTE_FIELDS + KIND_CODE]! - 1] !== key.kind) return false;
    const words = this.#words;
    const ints = this.#ints;
    const fields = slot * INT_FIELDS;
    const id = words[ints[fields + ID_WORD]!];
    const detail = words[ints[fields + DETAIL_WORD]!];
    switch (key.kind) {
      case "deviceState":
      case "deviceAlarm":
        return id === key.deviceId;
      case "outletState":
      case "outletLabel":
        return ints[fields + OUTLET_INDEX] === key.index && id === key.deviceId;
      case "outletSetting":
        return ints[fields + OUTLET_INDEX] === key.index && detail === key.setting && id === key.deviceId;
      case "outletMeasurement":
        return ints[fields + OUTLET_INDEX] === key.index && detail === key.type && id === key.deviceId;
      case "entityMeasurement":
        return (
          detail === key.type && words[ints[fields + ENTITY_WORD]!] === key.entityKey && id === key.deviceId
        );
      case "groupMeasurement":
        return detail === key.key && id === key.groupKey;
    }
  }

  /** The word whose number is at `place` of `#ints`. */
  #wordAt(place: number): string {
    return this.#words[this.#ints[place]!]!;
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
      if (this.#bytes[slot * BYTE_FIELDS + KIND_CODE] === 0) continue;
      const fields = slot * INT_FIELDS;
      ints[fields + ID_WORD] = this.#intern(old[ints[fields + ID_WORD]!]!);
      ints[fields + DETAIL_WORD] = this.#intern(old[ints[fields + DETAIL_WORD]!]!);
      ints[fields + ENTITY_WORD] = this.#intern(old[ints[fields + ENTITY_WORD]!]!);
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

  /** A new slot holding `key`, nothing published. */
  #create(key: TopicKey): Slot {
    const slot = this.#free.pop() ?? this.#next++;
    if (slot >= this.#capacity) this.#resize(Math.ceil(this.#capacity * 1.25));
    this.#grew = true;
    const ints = this.#ints;
    const fields = slot * INT_FIELDS;
    // In use (kind set, words "") before the words are looked up: a lookup may rebuild the word
    // list, which renumbers the words of every slot in use, this one's written so far too.
    this.#bytes[slot * BYTE_FIELDS + KIND_CODE] = CODE_OF_KIND.get(key.kind)!;
    this.#bytes[slot * BYTE_FIELDS + PUBLISHED] = 0;
    ints[fields + ID_WORD] = ints[fields + DETAIL_WORD] = ints[fields + ENTITY_WORD] = 0;
    ints[fields + ID_WORD] = this.#word(idOf(key));
    ints[fields + DETAIL_WORD] = this.#word(detailOf(key));
    ints[fields + ENTITY_WORD] = this.#word(key.kind === "entityMeasurement" ? key.entityKey : "");
    ints[fields + OUTLET_INDEX] = "index" in key ? key.index : 0;
    ints[fields + LAST_WALK] = 0;
    this.#nums[slot * NUMBER_FIELDS + LAST_NUMBER] = NaN;
    this.#nums[slot * NUMBER_FIELDS + LAST_PUBLISHED_AT] = 0;
    this.#texts[slot] = null;
    return slot;
  }

  /** Room for `capacity` slots (at least the slots made so far). */
  #resize(capacity: number): void {
    this.#ints = resized(this.#ints, capacity * INT_FIELDS);
    this.#bytes = resized(this.#bytes, capacity * BYTE_FIELDS);
    this.#nums = resized(this.#nums, capacity * NUMBER_FIELDS);
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
    if (byTopic === null && this.#position === this.#length) {
      if (grew) this.#trimOrder();
      return NONE;
    }
    // In order: the walk visited the slots before its position, the rest are gone. Out of order:
    // any slot of the previous walk or this one may be gone; the map holds them all.
    const gone: string[] = [];
    if (byTopic === null) {
      for (let p = this.#position; p < this.#length; p++) gone.push(this.#forget(this.#order[p]!));
    } else {
      for (const [topic, slot] of byTopic) {
        if (this.#ints[slot * INT_FIELDS + LAST_WALK] === this.#walk) continue;
        this.#forget(slot);
        gone.push(topic);
      }
    }
    this.#length = this.#position;
    if (grew) this.#trimOrder();
    return gone;
  }

  #trimOrder(): void {
    if (this.#order.length > this.#length) this.#order = resized(this.#order, Math.max(this.#length, 1));
  }

  /** Frees a slot (its strings too); returns its topic. */
  #forget(slot: Slot): string {
    const topic = this.topic(slot);
    const fields = slot * INT_FIELDS;
    this.#bytes[slot * BYTE_FIELDS + KIND_CODE] = 0;
    this.#ints[fields + ID_WORD] = this.#ints[fields + DETAIL_WORD] = this.#ints[fields + ENTITY_WORD] = 0;
    this.#texts[slot] = null;
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
