/**
 * The fold of lines driven from outside: per key, the first lines of a window pass, the rest are
 * counted, and one summary line per window says how many were folded; keys are bounded.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FoldedLog, LineFolder, OVERFLOW_KEY, foldedText, type Folded } from "../src/log-limit.js";
import { LogCapture } from "../testkit/log-capture.js";
import { waitFor } from "../testkit/wait.js";

describe("LineFolder", () => {
  it("passes the first `burst` lines of a key's window and counts the rest into one summary", () => {
    const summaries: Folded<number>[] = [];
    const folder = new LineFolder<number>((f) => summaries.push(f), { burst: 3, windowMs: 60_000 });
    const passed = Array.from({ length: 5000 }, (_, i) => folder.admit("a", i)).filter(Boolean).length;
    assert.equal(passed, 3);
    assert.equal(folder.admit("b", -1), true, "another key has its own window");
    assert.deepEqual(summaries, [], "nothing summarised before the window ends");
    folder.close();
    assert.deepEqual(summaries, [{ key: "a", count: 4997, windowMs: 60_000, sample: 4999 }]);
  });

  it("writes the summary when the window ends, from its own timer, and opens a new window", async () => {
    const summaries: Folded<string>[] = [];
    const folder = new LineFolder<string>((f) => summaries.push(f), { burst: 1, windowMs: 50 });
    for (let i = 0; i < 100; i += 1) folder.admit("k", `line ${i}`);
    await waitFor(() => summaries.length === 1, "the window's summary");
    assert.equal(summaries[0]?.count, 99);
    assert.equal(summaries[0]?.sample, "line 99");
    assert.equal(folder.admit("k", "again"), true, "a new window passes lines again");
    folder.close();
    assert.equal(summaries.length, 1, "a window without folds has no summary");
  });

  it("bounds the keys it follows: lines of further keys share one key", () => {
    const summaries: Folded<string>[] = [];
    const folder = new LineFolder<string>((f) => summaries.push(f), {
      burst: 1,
      windowMs: 60_000,
      maxKeys: 10,
    });
    for (let i = 0; i < 10_000; i += 1) folder.admit(`key-${i}`, `line ${i}`);
    assert.ok(folder.size <= 11, `follows ${folder.size} keys`);
    folder.close();
    assert.deepEqual(
      summaries.map((s) => [s.key, s.count]),
      [[OVERFLOW_KEY, 10_000 - 10 - 1]],
    );
  });

  it("survives a summary that throws", () => {
    const folder = new LineFolder<number>(
      () => {
        throw new Error("broken sink");
      },
      { burst: 0 },
    );
    assert.equal(folder.admit("x", 1), false);
    assert.doesNotThrow(() => folder.close());
  });
});

describe("FoldedLog", () => {
  it("writes a bounded number of lines and one summary with the count of what it folded", () => {
    const capture = new LogCapture();
    const log = new FoldedLog(capture.logger, { burst: 2, windowMs: 10_000 });
    for (let i = 0; i < 4814; i += 1) log.warn("bad topic", { topic: `t/${i}` }, "MQTT command refused");
    log.close();
    const lines = capture.lines;
    assert.equal(lines.length, 3);
    assert.deepEqual(
      lines.map((l) => l.topic),
      ["t/0", "t/1", "t/4813"],
    );
    const summary = lines[2];
    assert.equal(summary?.msg, "MQTT command refused … and 4,812 more like this in the last 10 s");
    assert.equal(summary?.folded, 4812);
    assert.equal(summary?.level, "warn");
  });

  it("says the count in the summary's words", () => {
    assert.equal(foldedText(4812, 10_000), "… and 4,812 more like this in the last 10 s");
    assert.equal(foldedText(1, 400), "… and 1 more like this in the last 1 s");
  });
});
