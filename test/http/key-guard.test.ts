/** The API key comparison and the failed-key lock-out, without a listener. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  FAILURE_WINDOW_MS,
  FailedKeyLimiter,
  MAX_FAILURES,
  MAX_TRACKED_CLIENTS,
  keyMatcher,
} from "../../src/http/api/key-guard.js";

test("keyMatcher accepts only the exact key, whatever the lengths", () => {
  const matches = keyMatcher("s3cret-key");
  assert.equal(matches("s3cret-key"), true);
  for (const wrong of ["", "s3cret-ke", "s3cret-key ", "S3cret-key", "x".repeat(10_000)]) {
    assert.equal(matches(wrong), false, JSON.stringify(wrong.slice(0, 20)));
  }
});

test("more than MAX_FAILURES failures in the window lock an address until the oldest leaves it", () => {
  const clock = { now: 1_000_000 };
  const limiter = new FailedKeyLimiter(() => clock.now);
  for (let i = 0; i < MAX_FAILURES; i++) {
    limiter.recordFailure("10.0.0.1");
    clock.now += 1000;
  }
  assert.equal(limiter.retryAfter("10.0.0.1"), 0, "ten failures are allowed");
  limiter.recordFailure("10.0.0.1");
  // The first failure was 10 s ago: it leaves the window in 50 s.
  assert.equal(limiter.retryAfter("10.0.0.1"), 50);
  assert.equal(limiter.retryAfter("10.0.0.2"), 0, "per address");
  clock.now += 50_000;
  assert.equal(limiter.retryAfter("10.0.0.1"), 0);
});

test("memory stays bounded: expired addresses are pruned, then the oldest", () => {
  const clock = { now: 0 };
  const limiter = new FailedKeyLimiter(() => clock.now);
  for (let i = 0; i < MAX_TRACKED_CLIENTS; i++) limiter.recordFailure(`old-${i}`);
  assert.equal(limiter.size, MAX_TRACKED_CLIENTS);
  clock.now += FAILURE_WINDOW_MS + 1;
  limiter.recordFailure("new-0");
  assert.equal(limiter.size, 1, "every expired address was dropped");

  for (let i = 1; i < MAX_TRACKED_CLIENTS + 500; i++) limiter.recordFailure(`new-${i}`);
  assert.equal(limiter.size, MAX_TRACKED_CLIENTS, "never more than the bound");
  // Many failures of one address keep at most MAX_FAILURES + 1 timestamps and still lock it.
  for (let i = 0; i < 1000; i++) limiter.recordFailure("busy");
  assert.ok(limiter.retryAfter("busy") > 0);
});

test("an IPv6 client is locked out by its /64: a fresh address in the same /64 is still locked", () => {
  const limiter = new FailedKeyLimiter(() => 1_000_000);
  for (let i = 1; i <= MAX_FAILURES + 1; i++) limiter.recordFailure(`2001:db8:1:2::${i.toString(16)}`);
  assert.ok(limiter.retryAfter("2001:db8:1:2:ffff::99") > 0, "another address of the same /64");
  assert.equal(limiter.retryAfter("2001:db8:1:3::1"), 0, "another /64");
  // An IPv4 peer of a dual-stack listener is its IPv4 address.
  for (let i = 0; i <= MAX_FAILURES; i++) limiter.recordFailure("::ffff:10.0.0.7");
  assert.ok(limiter.retryAfter("10.0.0.7") > 0);
});
