/**
 * The publisher's per-instance topic track: a walk of an unchanged shape reuses its slots without
 * naming a topic; any change of shape (appeared, gone, moved, an id that cannot be a topic) gives
 * the same slots a lookup by topic name would, and `end` reports exactly what was not visited.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { SETTING_NAMES } from "../../src/control/settings.js";
import type { TopicKey } from "../../src/mqtt/topics.js";
import { NO_SLOT, Track, type Slot } from "../../src/mqtt/published-state.js";

type Key = TopicKey;

/** A test topic name: every field of the key, in a fixed order. */
const topic = (key: Key): string =>
  [
    key.kind,
    "deviceId" in key ? key.deviceId : key.groupKey,
    "index" in key ? String(key.index) : "entityKey" in key ? key.entityKey : "",
    "type" in key ? key.type : "key" in key ? key.key : "setting" in key ? key.setting : "",
  ].join("/");

/** The id a key's topic cannot hold when it contains "#". */
const firstId = (key: Key): string => ("deviceId" in key ? key.deviceId : key.groupKey);

/** A track whose topic names are counted; ids containing "#" cannot be topics. */
function counted() {
  let named = 0;
  const track = new Track({
    accepts: (key) => !firstId(key).includes("#"),
    topic: (key) => {
      named++;
      return topic(key);
    },
  });
  return { track, named: () => named };
}

function walk(track: Track, keys: readonly Key[]): { slots: Slot[]; gone: string[] } {
  track.begin();
  const slots = keys.map((key) => track.visit(key));
  return { slots, gone: [...track.end()] };
}

describe("topic track", () => {
  const pdu: Key[] = [
    { kind: "deviceState", deviceId: "DEV1" },
    { kind: "outletState", deviceId: "DEV1", index: 0 },
    { kind: "outletMeasurement", deviceId: "DEV1", index: 0, type: "current" },
    { kind: "outletMeasurement", deviceId: "DEV1", index: 0, type: "realPower" },
    { kind: "outletState", deviceId: "DEV1", index: 1 },
    { kind: "outletMeasurement", deviceId: "DEV1", index: 1, type: "current" },
    { kind: "entityMeasurement", deviceId: "DEV1", entityKey: "phase0", type: "voltage" },
  ];

  it("names no topic when a walk has the shape of the one before, and keeps each slot's state", () => {
    const { track, named } = counted();
    const first = walk(track, pdu);
    assert.equal(named(), pdu.length);
    assert.deepEqual(
      first.slots.map((s) => track.topic(s)),
      pdu.map(topic),
    );
    assert.deepEqual(
      first.slots.map((s) => track.key(s)),
      pdu,
      "the key of each slot, as visited",
    );
    track.recordText(first.slots[3]!, 1000, "58");
    const names = named();

    // Fresh strings, as the next poll's JSON.parse makes them.
    const second = walk(track, JSON.parse(JSON.stringify(pdu)) as Key[]);
    assert.equal(named(), names, "no topic named again");
    assert.deepEqual(second.gone, []);
    assert.equal(second.slots[3], first.slots[3], "the same slot, with what was sent on it");
    assert.equal(track.lastText(second.slots[3]!), "58");
    assert.ok(track.isPublished(second.slots[3]!));
    assert.ok(!track.isPublished(second.slots[2]!));
  });

  it("reports what disappeared, and finds what moved by its topic", () => {
    const { track } = counted();
    const first = walk(track, pdu);
    const reordered = [pdu[4]!, pdu[5]!, pdu[0]!, pdu[1]!, pdu[2]!, pdu[6]!];
    const second = walk(track, reordered);
    assert.deepEqual(second.gone, [topic(pdu[3]!)]);
    assert.equal(second.slots[0], first.slots[4]);
    assert.equal(second.slots[5], first.slots[6]);
    assert.equal(track.size, reordered.length);
    // The next walk of the new shape is positional again.
    const third = walk(track, reordered);
    assert.deepEqual(third.gone, []);
    assert.deepEqual(third.slots, second.slots);
  });

  it("gives a thing that cannot be a topic no slot and no position", () => {
    const { track } = counted();
    const bad: Key = { kind: "outletMeasurement", deviceId: "DEV#", index: 0, type: "current" };
    const keys = [pdu[0]!, bad, pdu[1]!];
    const first = walk(track, keys);
    assert.equal(first.slots[1], NO_SLOT);
    assert.equal(track.size, 2);
    const second = walk(track, keys);
    assert.deepEqual(second.slots, first.slots);
    assert.deepEqual(second.gone, []);
  });

  it("agrees with a map by topic over any sequence of walks", () => {
    const id = fc.constantFrom("DEV1", "DEV2", "D#V");
    const index = fc.integer({ min: 0, max: 3 });
    const type = fc.constantFrom("current", "realPower");
    const key: fc.Arbitrary<Key> = fc.oneof(
      fc.record({ kind: fc.constantFrom("deviceState" as const, "deviceAlarm" as const), deviceId: id }),
      fc.record({
        kind: fc.constantFrom("outletState" as const, "outletLabel" as const),
        deviceId: id,
        index,
      }),
      fc.record({ kind: fc.constant("outletMeasurement" as const), deviceId: id, index, type }),
      fc.record({
        kind: fc.constant("outletSetting" as const),
        deviceId: id,
        index,
        setting: fc.constantFrom(...SETTING_NAMES),
      }),
      fc.record({
        kind: fc.constant("entityMeasurement" as const),
        deviceId: id,
        entityKey: fc.constantFrom("phase0", "total0"),
        type,
      }),
      fc.record({ kind: fc.constant("groupMeasurement" as const), groupKey: id, key: type }),
    );
    // Each walk visits distinct things, as a snapshot does.
    const walkKeys = fc.uniqueArray(key, { maxLength: 12, selector: (k) => topic(k) });
    fc.assert(
      fc.property(fc.array(walkKeys, { minLength: 1, maxLength: 8 }), (walks) => {
        const { track } = counted();
        const model = new Map<string, Slot>();
        const sentNum = new Map<string, number>();
        let n = 0;
        for (const keys of walks) {
          const { slots, gone } = walk(track, keys);
          const visited = new Set<string>();
          keys.forEach((k, i) => {
            const slot = slots[i];
            if (firstId(k).includes("#")) return assert.equal(slot, NO_SLOT);
            assert.ok(slot !== undefined && slot >= 0);
            const name = track.topic(slot);
            assert.equal(name, topic(k));
            assert.deepEqual(track.key(slot), { ...k });
            const known = model.get(name);
            if (known !== undefined) assert.equal(slot, known, "the slot remembered for that topic");
            // What was published on the topic before, or nothing for a new one (a reused slot too).
            assert.deepEqual(track.lastNumber(slot), sentNum.get(name) ?? NaN);
            assert.equal(track.lastPublishedAt(slot), sentNum.has(name) ? 1000 + sentNum.get(name)! : 0);
            assert.equal(track.isPublished(slot), sentNum.has(name));
            track.recordNumber(slot, 1000 + ++n, n);
            sentNum.set(name, n);
            model.set(name, slot);
            visited.add(name);
          });
          const expectGone = [...model.keys()].filter((t) => !visited.has(t));
          assert.deepEqual([...gone].sort(), expectGone.sort());
          for (const t of expectGone) {
            model.delete(t);
            sentNum.delete(t);
          }
          assert.equal(track.size, model.size);
          const remembered = [...model.values()];
          assert.equal(new Set(remembered).size, remembered.length, "one slot per remembered topic");
        }
      }),
      { numRuns: 300 },
    );
  });

  it("keeps each slot's number and time as the track grows past its first arrays", () => {
    const { track } = counted();
    const many: Key[] = Array.from({ length: 300 }, (_, i) => ({
      kind: "outletMeasurement",
      deviceId: "DEV1",
      index: i,
      type: "current",
    }));
    const first = walk(track, many);
    first.slots.forEach((slot, i) => track.recordNumber(slot, 5000 + i, i / 10));
    const second = walk(track, many);
    assert.deepEqual(
      second.slots.map((slot) => [track.lastNumber(slot), track.lastPublishedAt(slot)]),
      many.map((_, i) => [i / 10, 5000 + i]),
    );
    assert.ok(second.slots.every((slot) => track.isPublished(slot)));
  });

  it("keeps every slot's state when its arrays are trimmed after a walk and grown again", () => {
    const { track } = counted();
    const keys = (n: number): Key[] =>
      Array.from({ length: n }, (_, i) => ({
        kind: "outletMeasurement",
        deviceId: "D",
        index: i,
        type: "w",
      }));
    // 37 slots: grown once past the first 32, then trimmed to 37 at the end of the walk.
    walk(track, keys(37)).slots.forEach((slot, i) => track.recordNumber(slot, 100 + i, i));
    // 80: grown twice more (by a quarter each time), trimmed again.
    const grown = walk(track, keys(80));
    grown.slots.slice(37).forEach((slot, i) => {
      track.recordNumber(slot, 200 + i, -i);
      track.recordText(slot, 200 + i, `p${i}`);
    });
    // 20: 60 slots gone, arrays keep their room; then 90 reuse the freed slots and grow.
    assert.equal(walk(track, keys(20)).gone.length, 60);
    const last = walk(track, keys(90));
    assert.deepEqual(
      last.slots
        .slice(0, 20)
        .map((slot) => [track.lastNumber(slot), track.lastPublishedAt(slot), track.isPublished(slot)]),
      keys(20).map((_, i) => [i, 100 + i, true]),
    );
    assert.ok(
      last.slots.slice(20).every((slot) => !track.isPublished(slot) && Number.isNaN(track.lastNumber(slot))),
    );
    assert.ok(
      last.slots
        .slice(20)
        .every((slot) => track.lastText(slot) === null && track.lastPublishedAt(slot) === 0),
    );
    assert.deepEqual(
      last.slots.map((slot) => track.key(slot)),
      keys(90),
    );
    assert.equal(new Set(last.slots).size, 90);
    assert.equal(walk(track, keys(90)).gone.length, 0);
  });

  it("keeps its word list bounded when a PDU invents new ids every poll", () => {
    const { track } = counted();
    for (let n = 0; n < 2000; n++) {
      const keys: Key[] = [
        { kind: "deviceState", deviceId: `DEV${n}` },
        { kind: "outletMeasurement", deviceId: `DEV${n}`, index: 0, type: `type${n}` },
        { kind: "entityMeasurement", deviceId: "DEV", entityKey: `phase${n}`, type: "voltage" },
      ];
      const { slots } = walk(track, keys);
      assert.deepEqual(
        slots.map((slot) => track.key(slot)),
        keys,
        "every slot still names its key after the list was rebuilt",
      );
    }
    assert.equal(track.size, 3);
    assert.ok(track.words < 200, `${track.words} words for 3 slots`);
  });
});
