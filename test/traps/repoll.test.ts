/** The re-poll limiter: at most one extra poll per instance per second, also when the loop is late. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RepollLimiter, REPOLL_GAP_MS } from "../../src/traps/repoll.js";
import { sleep } from "../../testkit/repo.js";

describe("the re-poll limiter", () => {
  it("polls at once, then once at the second's end for the traps within it", async () => {
    let now = 0;
    const polls: number[] = [];
    const limiter = new RepollLimiter(
      () => polls.push(now),
      () => now,
    );
    limiter.trap("a");
    now = 10;
    limiter.trap("a");
    limiter.trap("a");
    assert.deepEqual(polls, [0]);
    now = REPOLL_GAP_MS;
    await sleep(REPOLL_GAP_MS + 100);
    assert.deepEqual(polls, [0, REPOLL_GAP_MS]);
    limiter.stop();
  });

  it("a trap that comes while the loop is too busy to run the pending poll on time does not poll twice", async () => {
    let now = 0;
    const polls: number[] = [];
    const limiter = new RepollLimiter(
      () => polls.push(now),
      () => now,
    );
    limiter.trap("a");
    now = 10;
    limiter.trap("a"); // asks for the poll at the second's end
    // The loop is busy past that poll's time; a trap handled before the late timer sees a second gone.
    const until = Date.now() + REPOLL_GAP_MS + 50;
    while (Date.now() < until) {
      // busy
    }
    now = REPOLL_GAP_MS + 11;
    limiter.trap("a");
    await sleep(100);
    assert.equal(polls.length, 2, `polls at ${polls.join(", ")}: one at once and one at the second's end`);
    assert.equal(limiter.polls, 2);
    limiter.stop();
  });
});
