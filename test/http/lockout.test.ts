/**
 * The failed-key lock-out (issue 14, item 12): a live lock is never evicted by failures from other
 * addresses, a full table refuses new failures with 429, and `Api.TrustedProxies` decides whose
 * `X-Forwarded-For` names the client (unit tests of the limiter and the resolver, then the real App
 * behind a "proxy" on 127.0.0.1, and the same App without the setting).
 */
import assert from "node:assert/strict";
import { after, before, describe, it, test } from "node:test";
import {
  clientAddressResolver,
  FAILURE_WINDOW_MS,
  FailedKeyLimiter,
  MAX_FAILURES,
  MAX_TRACKED_CLIENTS,
} from "../../src/http/api/key-guard.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";

const lock = (limiter: FailedKeyLimiter, client: string): void => {
  for (let i = 0; i <= MAX_FAILURES; i++) assert.ok(limiter.recordFailure(client));
  assert.ok(limiter.retryAfter(client) > 0, `${client} is locked`);
};

test("a live lock survives failures from 10,000 other addresses", () => {
  const clock = { now: 5_000_000 };
  const limiter = new FailedKeyLimiter(() => clock.now);
  lock(limiter, "198.51.100.66");
  for (let i = 0; i < MAX_TRACKED_CLIENTS * 2; i++) {
    clock.now += 1;
    assert.ok(limiter.recordFailure(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`));
  }
  assert.ok(limiter.size <= MAX_TRACKED_CLIENTS);
  assert.ok(limiter.retryAfter("198.51.100.66") > 0, "still locked");
});

test("when every remembered address is locked, new failures are refused until the first lock ends", () => {
  const clock = { now: 0 };
  const limiter = new FailedKeyLimiter(() => clock.now, 3);
  for (const client of ["a", "b", "c"]) {
    lock(limiter, client);
    clock.now += 1000;
  }
  assert.equal(limiter.recordFailure("d"), false, "no room: refused");
  assert.equal(limiter.size, 3);
  assert.ok(limiter.retryAfter("a") > 0 && limiter.retryAfter("c") > 0, "the locks are kept");
  assert.equal(limiter.fullRetryAfter(), Math.ceil((FAILURE_WINDOW_MS - 3000) / 1000));
  // A locked address's own failures are still counted.
  assert.equal(limiter.recordFailure("b"), true);
  clock.now = FAILURE_WINDOW_MS + 1;
  assert.equal(limiter.recordFailure("d"), true, "a's lock ended: room again");
  assert.equal(limiter.retryAfter("a"), 0);
});

test("the client address: X-Forwarded-For only from trusted proxies, read from the right", () => {
  const none = clientAddressResolver([]);
  assert.equal(none("10.0.0.9", "203.0.113.7"), "10.0.0.9", "no trusted proxy: the header is ignored");
  assert.equal(none("::ffff:10.0.0.9", undefined), "10.0.0.9");

  const resolve = clientAddressResolver(["10.0.0.2", "fd00::2"]);
  assert.equal(resolve("10.0.0.9", "203.0.113.7"), "10.0.0.9", "an untrusted peer cannot name the client");
  assert.equal(resolve("10.0.0.2", "203.0.113.7"), "203.0.113.7");
  assert.equal(resolve("::ffff:10.0.0.2", "203.0.113.7"), "203.0.113.7", "IPv4-mapped peer");
  assert.equal(resolve("fd00:0:0::2", "2001:db8::7"), "2001:db8::7", "IPv6 in any notation");
  // The client cannot choose its address by sending its own header through the proxy.
  assert.equal(resolve("10.0.0.2", "1.2.3.4, 203.0.113.7"), "203.0.113.7");
  assert.equal(resolve("10.0.0.2", "203.0.113.7, 10.0.0.2"), "203.0.113.7", "trusted hops are skipped");
  assert.equal(resolve("10.0.0.2", ["1.1.1.1", "203.0.113.7"]), "203.0.113.7");
  assert.equal(resolve("10.0.0.2", "not-an-address"), "10.0.0.2", "garbage names nobody");
  assert.equal(resolve("10.0.0.2", undefined), "10.0.0.2");
});

const KEY = "lockout-test-key-7b1e3c95";

async function post(
  h: AppHarness<"main">,
  dev: string,
  key: string,
  forwardedFor: string,
): Promise<{ status: number; text: string }> {
  const r = await h.api.post(
    `/api/v1/instances/lab/outlets/${dev}/0/control`,
    { action: "on" },
    { "x-api-key": key, "x-forwarded-for": forwardedFor },
  );
  return { status: r.status, text: r.text };
}

describe("Api.TrustedProxies through the real App", () => {
  let proxied: AppHarness<"main">;
  let direct: AppHarness<"main">;

  const start = (trusted: readonly string[] | undefined) =>
    startAppHarness<"main">({
      sims: { main: { outlets: 2 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY, ...(trusted === undefined ? {} : { trustedProxies: trusted }) },
          pdus: [pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 2 })],
        }),
    });

  before(async () => {
    [proxied, direct] = await Promise.all([start(["127.0.0.1"]), start(undefined)]);
    await Promise.all([proxied.waitForPoll("lab"), direct.waitForPoll("lab")]);
  });
  after(async () => {
    await proxied?.close();
    await direct?.close();
  });

  it("behind a trusted proxy, locks out the attacker, not every client", async () => {
    const dev = proxied.sims.main.deviceIds()[0]!;
    for (let n = 1; n <= MAX_FAILURES; n++)
      assert.equal((await post(proxied, dev, `wrong-${n}`, "203.0.113.7")).status, 401);
    assert.equal((await post(proxied, dev, "wrong-11", "203.0.113.7")).status, 429);
    const locked = await post(proxied, dev, KEY, "203.0.113.7");
    assert.equal(locked.status, 429, locked.text);
    assert.match(locked.text, /203\.0\.113\.7/);
    // Another client behind the same proxy is not locked out.
    const other = await post(proxied, dev, KEY, "203.0.113.8");
    assert.equal(other.status, 200, other.text);
    const audits = proxied.audits().map((a) => a.client);
    assert.ok(audits.includes("203.0.113.7") && audits.includes("203.0.113.8"), JSON.stringify(audits));
  });

  it("without TrustedProxies, X-Forwarded-For is ignored: a fresh header per try does not escape the lock", async () => {
    const dev = direct.sims.main.deviceIds()[0]!;
    for (let n = 1; n <= MAX_FAILURES; n++)
      assert.equal((await post(direct, dev, `wrong-${n}`, `198.51.100.${n}`)).status, 401);
    assert.equal((await post(direct, dev, "wrong-11", "198.51.100.11")).status, 429);
    const locked = await post(direct, dev, KEY, "198.51.100.200");
    assert.equal(locked.status, 429, locked.text);
    assert.match(locked.text, /127\.0\.0\.1/);
    assert.ok(direct.audits().every((a) => a.client === "127.0.0.1"));
  });
});
