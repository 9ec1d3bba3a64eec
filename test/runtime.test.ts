/** Which heap flags the service adds to what its caller set (src/runtime.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  DEFAULT_NODE_OPTIONS,
  heapFlagsReport,
  heapNeededMb,
  missingHeapFlags,
  RUNTIME_FLAGS_ENV,
  userHeapFlags,
} from "../src/runtime.js";

describe("heap flags", () => {
  it("adds both flags of the image when nothing sets them", () => {
    assert.deepEqual(missingHeapFlags([], undefined).join(" "), DEFAULT_NODE_OPTIONS);
    assert.deepEqual(
      missingHeapFlags(["--enable-source-maps"], "--trace-warnings").join(" "),
      DEFAULT_NODE_OPTIONS,
    );
  });

  it("raises the old-space cap to what a large configured fleet needs, never below the default", () => {
    assert.deepEqual(missingHeapFlags([], undefined, 100), [
      "--max-old-space-size=480",
      "--max-semi-space-size=32",
    ]);
    // 4000 PDUs ended out of memory under the fixed 480 MB cap (npm run bench -- --only scale).
    assert.deepEqual(missingHeapFlags([], undefined, 4000), [
      `--max-old-space-size=${heapNeededMb(4000)}`,
      "--max-semi-space-size=32",
    ]);
    assert.ok(heapNeededMb(4000) > 480);
    assert.deepEqual(missingHeapFlags(["--max-old-space-size=300"], undefined, 4000), [
      "--max-semi-space-size=32",
    ]);
  });

  it("keeps a flag set on the command line or in NODE_OPTIONS, in either spelling", () => {
    assert.deepEqual(missingHeapFlags(["--max-old-space-size=1024"], undefined), [
      "--max-semi-space-size=32",
    ]);
    assert.deepEqual(missingHeapFlags([], "--max_semi_space_size=8"), ["--max-old-space-size=480"]);
    assert.deepEqual(missingHeapFlags(["--max-semi-space-size", "8"], " --max-old-space-size=99 "), []);
    assert.deepEqual(userHeapFlags(["--max_old_space_size=99"], "--inspect --max-semi-space-size=8"), [
      "--max_old_space_size=99",
      "--max-semi-space-size=8",
    ]);
  });

  it("does not take a similar flag for a heap flag", () => {
    assert.deepEqual(missingHeapFlags(["--max-old-space-size-extra=1"], "--max-semi-space"), [
      "--max-old-space-size=480",
      "--max-semi-space-size=32",
    ]);
  });

  it("reports what was added and what the user set", () => {
    const env = { [RUNTIME_FLAGS_ENV]: "--max-semi-space-size=32", NODE_OPTIONS: "--max-old-space-size=200" };
    const report = heapFlagsReport(env, ["--max-semi-space-size=32"]);
    assert.deepEqual(report.applied, ["--max-semi-space-size=32"]);
    assert.deepEqual(report.kept, ["--max-old-space-size=200"]);
    assert.match(String(report.why), /four times/);
    assert.deepEqual(heapFlagsReport({}, []), { applied: [], kept: [], why: null });
  });
});
