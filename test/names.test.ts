import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isSafeName, MAX_NAME_BYTES, nameProblem, pathSegment, quoteName } from "../src/names.js";
import { TopicIdGuard, topicProblem, WARNED_IDS_MAX, WARNINGS_PER_WINDOW } from "../src/mqtt/topics.js";
import { LogCapture } from "../testkit/log-capture.js";

describe("the safe-name predicate (contract §7)", () => {
  it("refuses every kind of unsafe name the contract lists", () => {
    const unsafe: [string, RegExp][] = [
      ["", /empty/],
      ["x".repeat(MAX_NAME_BYTES + 1), /longer than 128 bytes/],
      ["é".repeat(65), /longer than 128 bytes/], // 130 bytes in 65 characters
      ["x".repeat(65536), /longer than 128 bytes/],
      [".", /\. or \.\./],
      ["..", /\. or \.\./],
      ["a/b", /'\/'/],
      ["a+b", /'\+'/],
      ["#", /'#'/],
      ["a\u0000b", /U\+0000/],
      ["a\u0001", /U\+0001/],
      ["\u001f", /U\+001F/],
      ["a\u007fb", /U\+007F/],
      ["a\u0085b", /U\+0085/],
      ["\u009f", /U\+009F/],
      ["a\ufffe", /U\+FFFE/],
      ["a\uffff", /U\+FFFF/],
      ["\ufdd0", /U\+FDD0/],
      ["\u{1fffe}", /U\+1FFFE/],
      ["a\ud800b", /lone surrogate U\+D800/],
      ["\udc00", /lone surrogate U\+DC00/],
      ["a\ud83d", /lone surrogate/],
    ];
    for (const [name, why] of unsafe) {
      const problem = nameProblem(name);
      assert.notEqual(problem, null, quoteName(name));
      assert.match(problem ?? "", why, quoteName(name));
      assert.equal(isSafeName(name), false);
    }
  });

  it("accepts real ids, edge lengths and any other Unicode", () => {
    for (const name of [
      "A0AE260C851900C3",
      "E4A1000001000001",
      "phase0",
      "total",
      "2",
      "with space",
      "ümlaut",
      "a.b",
      "...",
      "x".repeat(MAX_NAME_BYTES),
      "é".repeat(64), // exactly 128 bytes
      "😀",
      "\u00a0",
      "\ufdcf\ufdf0\ufffd",
    ]) {
      assert.equal(nameProblem(name), null, quoteName(name));
    }
  });

  it("builds URL segments that normalisation cannot change, and refuses the rest", () => {
    assert.equal(pathSegment("A0AE", "device id"), "A0AE");
    assert.equal(pathSegment("a b?c", "device id"), "a%20b%3Fc");
    for (const bad of [".", "..", "", "a/b", "a\u0000"]) {
      assert.throws(() => pathSegment(bad, "device id"), /device id .* cannot be part of a URL/);
    }
  });

  it("quotes names for logs short and escaped", () => {
    assert.equal(quoteName("a\u0001"), '"a\\u0001"');
    const long = quoteName("x".repeat(65536));
    assert.ok(long.length < 100, long);
    assert.match(long, /65536 bytes/);
  });
});

describe("whole topics before they are published", () => {
  it("refuses what the protocol or a strict broker cannot take", () => {
    assert.equal(topicProblem("pdu-bridge/default/A0AE/state"), null);
    assert.equal(topicProblem("a//b"), null);
    assert.match(topicProblem("") ?? "", /empty/);
    assert.match(topicProblem(`p/${"x".repeat(65534)}`) ?? "", /longer than 65535 bytes/);
    assert.match(topicProblem("p/+/x") ?? "", /wildcard/);
    assert.match(topicProblem("p/#") ?? "", /wildcard/);
    assert.match(topicProblem("p/\u0085/x") ?? "", /U\+0085/);
    assert.match(topicProblem("p/\ud800") ?? "", /lone surrogate/);
  });
});

describe("the unsafe-id guard", () => {
  it("warns once per id, within a bounded set and a rate limit", () => {
    const capture = new LogCapture();
    let now = 0;
    const guard = new TopicIdGuard(capture.logger, () => now);
    // A PDU inventing a new bad id on every poll, 10,000 times, some of them 64 KiB long.
    for (let i = 0; i < 10_000; i++) {
      const id = i % 100 === 0 ? `${"x".repeat(65536)}/${i}` : `bad/${i}`;
      assert.equal(guard.ok("default", "device id", id), false);
    }
    assert.ok(guard.warnedSize <= WARNED_IDS_MAX, `remembered ${guard.warnedSize}`);
    const warnings = () => capture.lines.filter((l) => l.level === "warn");
    assert.equal(warnings().length, WARNINGS_PER_WINDOW, "rate-limited within one window");
    assert.ok(capture.text().length < 100_000, "no 64 KiB id written to the log");
    assert.equal(guard.skipped, 10_000);
    // The next window warns again and says how many were suppressed.
    now += 60_000;
    guard.ok("default", "device id", "new/one");
    const last = warnings().at(-1);
    assert.equal(last?.suppressed, 10_000 - WARNINGS_PER_WINDOW);
    // A repeated id is not warned about again.
    guard.ok("default", "device id", "new/one");
    assert.equal(warnings().length, WARNINGS_PER_WINDOW + 1);
  });
});
