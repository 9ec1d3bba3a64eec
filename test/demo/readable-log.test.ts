/**
 * The demo's log lines are for a person at a terminal: one readable line per record (time, level,
 * message, the record's own fields), never JSON, with secrets redacted as in the service's JSON.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createLogger, readableLines } from "../../src/log.js";
import { waitFor } from "../../testkit/wait.js";

describe("readable log lines (the demo)", () => {
  it("prints time, level, message and fields, redacted, one line per record", async () => {
    let text = "";
    const logger = createLogger({ level: "info", destination: readableLines((s) => (text += s)) });
    logger.warn({ instance: "default", failures: 2, password: "hunter2-secret" }, "poll failed");
    logger.info("instance online");
    await waitFor(() => text.split("\n").length >= 3, "two lines");
    const [first, second] = text.split("\n");
    assert.match(
      first!,
      /^\d\d:\d\d:\d\d warn {2}poll failed \(instance=default failures=2 password=\[redacted\]\)$/,
    );
    assert.match(second!, /^\d\d:\d\d:\d\d info {2}instance online$/);
    assert.ok(!text.includes("{"), "no JSON");
    assert.ok(!text.includes("hunter2"), "no secret");
  });
});
