/** Which runtime flags the service adds to what its caller set (src/runtime.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getHeapStatistics } from "node:v8";
import {
  applyHeapFlags,
  CAPPED_HEAP_GROWING_PERCENT,
  DEFAULT_NODE_OPTIONS,
  HEAP_GROWING_PERCENT,
  heapFlagsReport,
  missingHeapFlags,
  userHeapFlags,
} from "../src/runtime.js";

const GROWING = `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
const CAPPED = `--heap-growing-percent=${CAPPED_HEAP_GROWING_PERCENT}`;

describe("heap flags", () => {
  it("adds the growing factor when nothing sets it, whatever else is set", () => {
    assert.deepEqual(missingHeapFlags([], undefined), [GROWING]);
    assert.deepEqual(missingHeapFlags(["--enable-source-maps"], "--max-semi-space-size=8"), [GROWING]);
  });

  it("grows the heap less under a heap cap (the image's, or anyone's)", () => {
    assert.ok(CAPPED_HEAP_GROWING_PERCENT < HEAP_GROWING_PERCENT);
    assert.deepEqual(missingHeapFlags(["--enable-source-maps"], DEFAULT_NODE_OPTIONS), [CAPPED]);
    assert.deepEqual(missingHeapFlags(["--max-old-space-size=1024"], "--max-semi-space-size=8"), [CAPPED]);
    assert.deepEqual(missingHeapFlags([], "--max_heap_size=600"), [CAPPED]);
    assert.deepEqual(missingHeapFlags(["--max-old-space-size-extra=1"], undefined), [GROWING]);
  });

  it("keeps a growing factor set on the command line, in either spelling", () => {
    assert.deepEqual(missingHeapFlags(["--heap-growing-percent=20"], undefined), []);
    assert.deepEqual(missingHeapFlags(["--heap_growing_percent", "20"], undefined), []);
    assert.deepEqual(missingHeapFlags(["--heap-growing-percent-extra=1"], undefined), [GROWING]);
    assert.deepEqual(userHeapFlags(["--max_old_space_size=99"], "--inspect --max-semi-space-size=8"), [
      "--max_old_space_size=99",
      "--max-semi-space-size=8",
    ]);
  });

  it("never lets the image's NODE_OPTIONS hold a flag Node refuses there", () => {
    assert.doesNotMatch(DEFAULT_NODE_OPTIONS, /heap-growing-percent/);
  });

  it("applies the flag in the running process and reports it with what the user set", () => {
    assert.deepEqual(heapFlagsReport([], undefined), { applied: [], kept: [], why: null });
    const limit = getHeapStatistics().heap_size_limit;
    assert.deepEqual(applyHeapFlags([], "--max-old-space-size=4000"), [CAPPED]);
    const report = heapFlagsReport([], "--max-old-space-size=4000");
    assert.deepEqual(report.applied, [CAPPED]);
    assert.deepEqual(report.kept, ["--max-old-space-size=4000"]);
    assert.match(String(report.why), /four times.*under a heap cap.*1\.3 times/);
    // Set at run time: the heap keeps the limit it started with (no restart, no cap of its own).
    assert.equal(getHeapStatistics().heap_size_limit, limit);
    assert.deepEqual(applyHeapFlags([], undefined), [GROWING]);
    assert.deepEqual(heapFlagsReport([], undefined).applied, [CAPPED, GROWING], "each reported once");
    assert.match(String(heapFlagsReport([], undefined).why), /1\.5 times/);
  });
});
