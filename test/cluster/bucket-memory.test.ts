/**
 * What a bucket lease remembers for the next holder (src/cluster/bucket-memory.ts): entries kept for
 * a time counted from when the reader first saw them, never longer ago than they were written;
 * malformed entries left out; the payload of older versions (ids alone) still read.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { BucketMemory, holdKeyOf, ONCE_KEEP_MS } from "../../src/cluster/bucket-memory.js";

test("what is left of each entry travels, and the reader counts it from when it saw the payload", () => {
  const writer = new BucketMemory();
  writer.recordOnce("cmd-1-0", 1_000 + 130_000);
  writer.recordHold("rack-a\u0000dev\u00000", 1_000 + 7_000);
  const payload = writer.payload(3_000);
  assert.deepEqual(JSON.parse(payload), {
    once: ["cmd-1-0"],
    keep: [128_000],
    holds: { [holdKeyOf("rack-a\u0000dev\u00000")]: 5_000 },
  });
  // Seen later on the reader's own clock: everything lasts at least as long there.
  const reader = BucketMemory.read(payload, 50_000);
  assert.equal(reader.usedOnce("cmd-1-0", 50_000 + 127_999), true);
  assert.equal(reader.usedOnce("cmd-1-0", 50_000 + 128_000), false);
  assert.equal(reader.heldFor("rack-a\u0000dev\u00000", 50_000 + 1_000), 4_000);
  assert.equal(reader.heldFor("rack-a\u0000dev\u00001", 50_000), 0, "another outlet is not held");
  reader.prune(50_000 + 200_000);
  assert.deepEqual(JSON.parse(reader.payload(50_000 + 200_000)), { once: [], keep: [], holds: {} });
});

test("a payload of ids alone keeps each for the minimum; malformed entries are left out", () => {
  const old = BucketMemory.read(JSON.stringify({ once: ["a-0", "b-1"] }), 0);
  assert.equal(old.usedOnce("a-0", ONCE_KEEP_MS - 1), true);
  assert.equal(old.usedOnce("a-0", ONCE_KEEP_MS), false);
  const hostile = BucketMemory.read(
    JSON.stringify({
      once: ["ok-1", "bad id", 7, "x".repeat(65), "ok-2"],
      keep: [1000, 1000, 1000, 1000, -5],
      holds: { short: 1000, AAAAAAAAAAAAAAAA: "1000", BBBBBBBBBBBBBBBB: 1e12, CCCCCCCCCCCCCCCC: 2000 },
    }),
    0,
  );
  assert.equal(hostile.usedOnce("ok-1", 999), true);
  assert.equal(hostile.usedOnce("ok-2", 0), false, "a negative time is not kept");
  assert.deepEqual(Object.keys((JSON.parse(hostile.payload(0)) as { holds: object }).holds), [
    "CCCCCCCCCCCCCCCC",
  ]);
  for (const text of ["", "null", "[]", "{", '{"once":"x"}', '{"holds":[1]}']) {
    assert.deepEqual(
      JSON.parse(BucketMemory.read(text, 0).payload(0)),
      { once: [], keep: [], holds: {} },
      text,
    );
  }
});

test("a payload that would not fit the lease says so", () => {
  const memory = new BucketMemory();
  let k = 0;
  while (memory.fits(0)) memory.recordOnce(`command-${String(k++).padStart(6, "0")}-0`, 120_000);
  assert.ok(k > 300, `${k} ids fit`);
});
