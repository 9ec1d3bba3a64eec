/**
 * The checkpoint format (src/energy/checkpoint.ts) and its sizes: counters survive a write and a
 * read exactly (a restarted bridge continues from the same numbers); 24,000 outlets spread over
 * the default 64 buckets fit the coordination engine's record with room, and in one `State.Dir`
 * file; a record that is not a deflated checkpoint, or inflates beyond its bound, is refused.
 */
import assert from "node:assert/strict";
import { deflateRawSync } from "node:zlib";
import { describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { MAX_RECORD_PAYLOAD_LENGTH } from "../../src/cluster/store.js";
import { InstanceBook } from "../../src/energy/book.js";
import {
  bookOf,
  CheckpointError,
  checkpointOf,
  entryOf,
  readCheckpoint,
  type InstanceEntry,
} from "../../src/energy/checkpoint.js";
import { decodeRecord, encodeRecord, MAX_RECORD_JSON_BYTES } from "../../src/energy/engine.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { device, outlet, snapshot } from "../../testkit/snapshot-builders.js";

const T0 = 1_764_316_800_000;
/** An instance of `devices` units of 24 outlets, each with an energy reading, at `at`. */
function fleetSnapshot(id: string, devices: number, at: number, seed: number): Snapshot {
  return snapshot(
    id,
    Array.from({ length: devices }, (_, d) =>
      device({
        id: `E4A1${String(seed).padStart(6, "0")}${String(d).padStart(4, "0")}`,
        outlets: Array.from({ length: 24 }, (_, i) =>
          outlet(i, { energy: 1234.567 + seed * 11.3 + d * 7.1 + i * 0.713 }),
        ),
      }),
    ),
    [],
    at,
  );
}

describe("energy checkpoints", () => {
  it("restores every counter as it was written", () => {
    const book = new InstanceBook();
    book.update(fleetSnapshot("rack-a", 2, T0, 1), () => undefined);
    book.update(fleetSnapshot("rack-a", 2, T0 + 5000, 1), () => undefined);
    const entry = entryOf(book);
    const read = readCheckpoint(JSON.parse(JSON.stringify(checkpointOf({ "rack-a": entry }, T0))));
    const restored = bookOf(read.instances["rack-a"]!);
    for (const [id, d] of book.devices)
      for (const [index, c] of d.outlets) {
        assert.equal(restored.outletWh(id, index), Math.ceil(c.lifetimeWh * 1000 - 1e-6) / 1000);
        assert.ok(
          Math.floor(c.lifetimeWh * 1000) / 1000 <= restored.outletWh(id, index)!,
          "never below what was published",
        );
        assert.equal(
          restored.devices.get(id)?.outlets.get(index)?.baseWh,
          Math.round(c.baseWh * 1000) / 1000,
        );
      }
  });

  it("fits 24,000 outlets over 64 buckets into the engine's records with room, and into one file", () => {
    const buckets = new Map<number, Record<string, InstanceEntry>>();
    const all: Record<string, InstanceEntry> = {};
    // 1,000 PDUs of 24 outlets.
    for (let k = 0; k < 1000; k++) {
      const id = `rack-${String(k).padStart(4, "0")}`;
      const book = new InstanceBook();
      book.update(fleetSnapshot(id, 1, T0, k), () => undefined);
      const entry = entryOf(book);
      all[id] = entry;
      const b = bucketOf(id, 64);
      buckets.set(b, { ...buckets.get(b), [id]: entry });
    }
    let largest = 0;
    for (const entries of buckets.values()) {
      const payload = encodeRecord(JSON.stringify(checkpointOf(entries, T0)));
      largest = Math.max(largest, payload.length);
      assert.deepEqual(readCheckpoint(decodeRecord(payload)).instances, entries);
    }
    // The largest bucket's record uses at most a quarter of what a record may carry.
    assert.ok(largest <= MAX_RECORD_PAYLOAD_LENGTH / 4, `largest record ${largest} characters`);
    const file = Buffer.byteLength(JSON.stringify(checkpointOf(all, T0)));
    assert.ok(file < 2_000_000, `one file of 24,000 outlets: ${file} bytes`);
    console.log(
      `checkpoint sizes at 24,000 outlets: largest of 64 records ${largest} characters, one file ${file} bytes`,
    );
  });

  it("refuses a record that is not a deflated checkpoint, or inflates beyond its bound", () => {
    assert.throws(() => decodeRecord("not base64 at all!"), CheckpointError);
    assert.throws(() => decodeRecord(Buffer.from("plain text").toString("base64")), CheckpointError);
    const bomb = deflateRawSync(Buffer.alloc(MAX_RECORD_JSON_BYTES + 1024, 0x20)).toString("base64");
    assert.throws(() => decodeRecord(bomb), /inflates beyond its bound/);
    assert.throws(
      () =>
        readCheckpoint({
          format: "pdu-bridge/energy",
          version: 1,
          writtenAt: T0,
          instances: { "bad id!": {} },
        }),
      /is not an instance id/,
    );
  });
});
