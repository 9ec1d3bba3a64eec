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
  // The columns, by slot. Key strings as word numbers; kind as its place in KINDS plus one, 0 free.
  #kind = new Uint8Array(32);
  #a = new Int32Array(32);
  #b = new Int32Array(32);
  #c = new Int32Array(32);
  #i = new Int32Array(32);
  /**
   * The words of the keys (ids, types, settings), each once. Searched only when a slot is made, so
   * no map: a map per track weighed more than the words.
   */
  #words: string[] = [""];
  /** Last text payload published (retained topics, device state and alarm, group rollups), else null. */
  #payload: (string | null)[] = [];
  /** 1 once anything was published on the slot. */
  #sent = new Uint8Array(32);
  /** Number of the last walk that visited the slot. */
  #seen = new Uint32Array(32);
  /** The number last published (NaN until then), and when (epoch ms). */
  #num = new Float64Array(32);
  #at = new Float64Array(32);
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
    const kind = KINDS[this.#kind[slot]! - 1]!;
    const words = this.#words;
    const deviceId = words[this.#a[slot]!]!;
    const index = this.#i[slot]!;
    const b = words[this.#b[slot]!]!;
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
        return { kind, deviceId, entityKey: words[this.#c[slot]!]!, type: b };
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
    return this.#sent[slot] === 1;
  }

  /** The number last published on a measurement's slot; NaN before the first. */
  num(slot: Slot): number {
    return this.#num[slot]!;
  }

  /** When the slot was last published (epoch ms); 0 before the first. */
  at(slot: Slot): number {
    return this.#at[slot]!;
  }

  /** Records a publish on the slot at `at`: `num` for a measurement, else the text `payload`. */
  published(slot: Slot, at: number, num = NaN, payload: string | null = null): void {
    this.#sent[slot] = 1;
    this.#at[slot] = at;
    this.#num[slot] = num;
    this.#payload[slot] = payload;
  }

  /** Starts a walk. */
  begin(): void {
    this.#pos = 0;
    // Never 0, the mark of a slot no walk visited yet.
    this.#walk = this.#walk === 0xffff_ffff ? 1 : this.#walk + 1;
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
      if (pos === this.#order.length) this.#order = grown(this.#order);
      this.#order[pos] = slot;
      if (pos === this.#length) this.#length++;
    }
    this.#seen[slot] = this.#walk;
    this.#pos = pos + 1;
    return slot;
  }

  /** Whether the slot holds `key`. */
  #same(slot: Slot, key: TopicKey): boolean {
    if (KINDS[this.#kind[slot]! - 1] !== key.kind) return false;
    const words = this.#words;
    switch (key.kind) {
      case "deviceState":
      case "deviceAlarm":
        return words[this.#a[slot]!] === key.deviceId;
      case "outletState":
      case "outletLabel":
        return this.#i[slot] === key.index && words[this.#a[slot]!] === key.deviceId;
      case "outletSetting":
        return (
          this.#i[slot] === key.index &&
          words[this.#b[slot]!] === key.setting &&
          words[this.#a[slot]!] === key.deviceId
        );
      case "outletMeasurement":
        return (
          this.#i[slot] === key.index &&
          words[this.#b[slot]!] === key.type &&
          words[this.#a[slot]!] === key.deviceId
        );
      case "entityMeasurement":
        return (
          words[this.#b[slot]!] === key.type &&
          words[this.#c[slot]!] === key.entityKey &&
          words[this.#a[slot]!] === key.deviceId
        );
      case "groupMeasurement":
        return words[this.#b[slot]!] === key.key && words[this.#a[slot]!] === key.groupKey;
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
    for (let slot = 0; slot < this.#next; slot++) {
      if (this.#kind[slot] === 0) continue;
      this.#a[slot] = this.#intern(old[this.#a[slot]!]!);
      this.#b[slot] = this.#intern(old[this.#b[slot]!]!);
      this.#c[slot] = this.#intern(old[this.#c[slot]!]!);
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
    if (slot >= this.#i.length) {
      this.#kind = grown(this.#kind);
      this.#a = grown(this.#a);
      this.#b = grown(this.#b);
      this.#c = grown(this.#c);
      this.#i = grown(this.#i);
      this.#sent = grown(this.#sent);
      this.#seen = grown(this.#seen);
      this.#num = grown(this.#num);
      this.#at = grown(this.#at);
    }
    this.#kind[slot] = KIND_CODE.get(key.kind)!;
    this.#a[slot] = this.#word(a(key));
    this.#b[slot] = this.#word(b(key));
    this.#c[slot] = this.#word(key.kind === "entityMeasurement" ? key.entityKey : "");
    this.#i[slot] = "index" in key ? key.index : 0;
    this.#payload[slot] = null;
    this.#sent[slot] = 0;
    this.#num[slot] = NaN;
    this.#at[slot] = 0;
    return slot;
  }

  /** Ends a walk: forgets the slots it did not visit and returns their topics. */
  end(): readonly string[] {
    const byTopic = this.#byTopic;
    this.#byTopic = null;
    if (byTopic === null && this.#pos === this.#length) return NONE;
    const walk = this.#walk;
    // In order: the walk visited the slots before #pos, the rest are gone. Out of order: any slot
    // of the previous walk or this one may be gone; the map holds them all.
    const gone: string[] = [];
    if (byTopic === null) {
      for (let p = this.#pos; p < this.#length; p++) gone.push(this.#forget(this.#order[p]!));
    } else {
      for (const [topic, slot] of byTopic) {
        if (this.#seen[slot] === walk) continue;
        this.#forget(slot);
        gone.push(topic);
      }
    }
    this.#length = this.#pos;
    return gone;
  }

  /** Frees a slot (its strings too); returns its topic. */
  #forget(slot: Slot): string {
    const topic = this.topic(slot);
    this.#kind[slot] = 0;
    this.#a[slot] = this.#b[slot] = this.#c[slot] = 0;
    this.#payload[slot] = null;
    this.#free.push(slot);
    return topic;
  }
}

/** A column with room for more: by a quarter (a PDU's topics stop growing after its first walk). */
function grown<T extends Int32Array | Uint32Array | Uint8Array | Float64Array>(column: T): T {
  const bigger = new (column.constructor as new (length: number) => T)(Math.ceil(column.length * 1.25));
  bigger.set(column);
  return bigger;
}
