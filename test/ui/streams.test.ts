/**
 * The console's event streams under a client that tries to hold them all, against the whole
 * service (the REST API on its worker thread, and on the main thread) polling the simulator, with
 * raw sockets from chosen loopback addresses:
 * - one address opening 64 streams that it never reads gets 8, then 429s until its connections
 *   reach `Http.MaxConnectionsPerClient` (32), then none, and another address still gets its
 *   stream (before: 64 streams, then 503 for every other console);
 * - 64 addresses holding one stream each keep another console out only until their oldest stream
 *   is `rotateAfterMs` old: the newcomer takes its place (before: 503 for as long as they held);
 * - the address is the client's, through the worker and through a trusted proxy's X-Forwarded-For
 *   (and only a trusted proxy's);
 * - at the overall limit, a new address takes the oldest stream of the address holding the most,
 *   never back and forth;
 * - a stream ends at its maximum age after a `reconnect` event, and the console in Chromium
 *   reconnects at once, never showing "Reconnecting…", and keeps updating;
 * - a client that stops reading is disconnected through the worker too: its TCP connection closes.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import { clientKey } from "../../src/ui/feed.js";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { singleUnitTree } from "../../testkit/fixtures/geist-trees.js";
import { RawStream } from "../../testkit/raw-http.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "streams-test-key-0123456789abcdef";

async function harness(worker: boolean, limits = {}): Promise<AppHarness<"rack">> {
  return startAppHarness<"rack">({
    sims: { rack: { outlets: 4, seed: 21 } },
    yaml: (sims) =>
      appYaml({
        pdus: [pduYaml("rack", sims.rack, { pollInterval: 1 })],
        api: { key: KEY, worker, trustedProxies: ["127.0.0.9"] },
      }),
    consoleLimits: limits,
  });
}

test("clients are counted by address, an IPv6 client by its /64", () => {
  assert.equal(clientKey("10.0.0.5"), "10.0.0.5");
  assert.equal(clientKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assert.equal(clientKey("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
  assert.equal(clientKey("2001:0db8:0001:0002::"), "2001:db8:1:2::/64");
  assert.equal(clientKey("::1"), "0:0:0:0::/64");
  assert.equal(clientKey("fe80::1"), "fe80:0:0:0::/64");
  // An IPv4 client of a dual-stack listener is its IPv4 address, not the /64 of every such client.
  assert.equal(clientKey("::ffff:10.0.0.5"), "10.0.0.5");
  assert.notEqual(clientKey("::ffff:10.0.0.5"), clientKey("::ffff:10.0.0.6"));
});

for (const worker of [true, false]) {
  describe(`event streams per client (${worker ? "API worker" : "main thread"})`, () => {
    let h: AppHarness<"rack">;
    let port: number;
    const open: RawStream[] = [];
    const stream = async (from: string, headers: Record<string, string> = {}, reading = false) => {
      const s = new RawStream(port, from, reading, headers);
      open.push(s);
      await s.answered.catch(() => undefined);
      return s;
    };
    const closeAll = async () => {
      for (const s of open.splice(0)) s.close();
      await waitFor(() => h.app.console!.streams === 0, "every stream closed");
    };

    before(async () => {
      h = await harness(worker);
      await h.waitForPoll("rack");
      port = h.app.endpoints.apiPort!;
    });
    after(async () => {
      for (const s of open) s.close();
      await h?.close();
    });

    test("64 streams from one address that never reads do not lock another address out", async () => {
      const feed = h.app.console!;
      const statuses: number[] = [];
      for (let i = 0; i < 64; i++) statuses.push((await stream("127.0.0.2")).status);
      assert.equal(statuses.filter((s) => s === 200).length, feed.maxStreamsPerClient, statuses.join(" "));
      // Each answered one holds its connection: past Http.MaxConnectionsPerClient (32), none is kept.
      assert.equal(statuses.filter((s) => s === 429).length, 32 - feed.maxStreamsPerClient);
      assert.equal(statuses.filter((s) => s === 0).length, 64 - 32);
      const refused = open.find((s) => s.status === 429)!;
      assert.match(refused.header("content-type") ?? "", /^application\/problem\+json/);
      assert.ok(Number(refused.header("retry-after")) > 0, "Retry-After");
      await waitFor(() => refused.body.includes("}"), "the problem's body");
      assert.match(refused.body, /8 event streams are open from 127\.0\.0\.2 already/);
      assert.equal(feed.streamsOf("127.0.0.2"), 8);

      const other = await stream("127.0.0.3", {}, true);
      assert.equal(other.status, 200, other.head);
      await waitFor(() => /^event: snapshot$/m.test(other.body), "the other client's snapshot");
      await closeAll();
    });

    test("the address is the client's: a trusted proxy's X-Forwarded-For counts, anyone else's does not", async () => {
      for (let i = 0; i < 8; i++) {
        assert.equal((await stream("127.0.0.9", { "x-forwarded-for": "10.1.1.1" })).status, 200);
      }
      const ninth = await stream("127.0.0.9", { "x-forwarded-for": "10.1.1.1" });
      assert.equal(ninth.status, 429);
      await waitFor(() => ninth.body.includes("from 10.1.1.1 already"), "the client named");
      assert.equal((await stream("127.0.0.9", { "x-forwarded-for": "10.1.1.2" })).status, 200);
      assert.equal(h.app.console!.streamsOf("10.1.1.1"), 8);
      assert.equal(h.app.console!.streamsOf("127.0.0.9"), 0, "not counted against the proxy");

      // From an address that is not a trusted proxy, the header is ignored.
      for (let i = 0; i < 8; i++) {
        assert.equal((await stream("127.0.0.4", { "x-forwarded-for": `10.2.0.${i}` })).status, 200);
      }
      const spoofed = await stream("127.0.0.4", { "x-forwarded-for": "10.2.0.99" });
      assert.equal(spoofed.status, 429);
      await waitFor(() => spoofed.body.includes("from 127.0.0.4 already"), "the peer named");
      await closeAll();
    });

    test("at the overall limit a new address takes the oldest stream of the address holding the most", async () => {
      const feed = h.app.console!;
      const first = await stream("127.0.1.1");
      for (let i = 1; i < 8; i++) await stream("127.0.1.1");
      for (let a = 2; a <= 8; a++) for (let i = 0; i < 8; i++) await stream(`127.0.1.${a}`);
      assert.equal(feed.streams, 64);
      assert.ok(open.every((s) => s.status === 200));
      const newcomer = await stream("127.0.1.9", {}, true);
      assert.equal(newcomer.status, 200, newcomer.head);
      assert.equal(feed.streams, 64);
      assert.equal(feed.streamsOf("127.0.1.9"), 1);
      first.socket.resume();
      await waitFor(
        () => first.closed || first.dechunked().ended,
        "the oldest stream of the first address ended",
      );
      assert.equal(feed.streamsOf("127.0.1.1"), 7);
      assert.ok(
        h.logs().some((l) => /ended an event stream to make room for another client/.test(String(l.msg))),
      );
      // The first address cannot take it back: 7 against at most 8 is its share.
      const back = await stream("127.0.1.1");
      assert.equal(back.status, 503);
      assert.ok(Number(back.header("retry-after")) > 0);
      await closeAll();
    });
  });
}

describe("64 addresses holding one stream each", () => {
  let h: AppHarness<"rack">;
  const ROTATE_MS = 1500;
  const open: RawStream[] = [];

  before(async () => {
    h = await harness(true, { rotateAfterMs: ROTATE_MS });
    await h.waitForPoll("rack");
  });
  after(async () => {
    for (const s of open) s.close();
    await h?.close();
  });

  test("keep another console out only until their oldest stream is rotateAfterMs old", async (t) => {
    const port = h.app.endpoints.apiPort!;
    const feed = h.app.console!;
    const stream = async (from: string) => {
      const s = new RawStream(port, from, true);
      open.push(s);
      await s.answered.catch(() => undefined);
      return s;
    };
    const holders: RawStream[] = [];
    for (let a = 1; a <= 64; a++) holders.push(await stream(`127.0.4.${a}`));
    assert.ok(holders.every((s) => s.status === 200));
    assert.equal(feed.streams, 64);
    // At once: every stream is younger than the rotation age.
    const early = await stream("127.0.0.6");
    assert.equal(early.status, 503, early.head);
    early.close();
    // The page retries (every 5 s); here until the oldest stream is old enough.
    let tries = 1;
    const newcomer = await waitFor(async () => {
      tries++;
      const s = await stream("127.0.0.6");
      if (s.status === 200) return s;
      s.close();
      return undefined;
    }, "the newcomer gets a stream");
    await waitFor(() => /^event: snapshot$/m.test(newcomer.body), "the newcomer's snapshot");
    assert.equal(feed.streams, 64);
    assert.equal(feed.streamsOf("127.0.0.6"), 1);
    await waitFor(
      () => holders[0]!.closed || holders[0]!.dechunked().ended,
      "the oldest holder's stream ended",
    );
    assert.equal(feed.streamsOf("127.0.4.1"), 0);
    // Holders taking places back rotate through the oldest: never more than one place each.
    for (let a = 1; a <= 8; a++) await stream(`127.0.4.${a}`);
    assert.ok([...Array(64).keys()].every((a) => feed.streamsOf(`127.0.4.${a + 1}`) <= 1));
    t.diagnostic(`newcomer admitted after ${tries} tries`);
  });
});

describe("stream age", () => {
  let h: AppHarness<"rack">;
  let browser: BrowserSession | undefined;
  const AGE_MS = 1500;

  before(async () => {
    h = await harness(true, { maxStreamAgeMs: AGE_MS });
    await h.waitForPoll("rack");
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });

  test("a stream ends at its maximum age, after a reconnect event", async () => {
    const s = new RawStream(h.app.endpoints.apiPort!, "127.0.0.5", true);
    try {
      await s.answered;
      assert.equal(s.status, 200);
      const opened = Date.now();
      const body = await waitFor(() => {
        const d = s.dechunked();
        return d.ended ? d.text : undefined;
      }, "the stream's end");
      const took = Date.now() - opened;
      assert.ok(took >= AGE_MS * 0.9 - 100, `ended after ${took} ms`);
      assert.ok(body.startsWith("retry: 2000\n\n"), body.slice(0, 40));
      assert.ok(body.endsWith('event: reconnect\ndata: {"reason":"age"}\n\n'), body.slice(-80));
      assert.equal(h.app.console!.streams, 0);
    } finally {
      s.close();
    }
  });

  test(
    "the console reconnects at once at every end of age, never shows Reconnecting…, and keeps updating",
    { skip: chromiumMissing },
    async () => {
      browser = await openBrowser("streams");
      const { page } = browser;
      // Counts the page's event streams and records every text the live badge shows.
      await page.addInitScript({
        content: `window.streamsOpened = 0;
          const Native = window.EventSource;
          window.EventSource = class extends Native {
            constructor(...args) { super(...args); window.streamsOpened++; }
          };
          window.badgeTexts = [];
          new MutationObserver(() => {
            const badge = document.querySelector(".live");
            if (badge && window.badgeTexts.at(-1) !== badge.textContent) window.badgeTexts.push(badge.textContent);
          }).observe(document, { subtree: true, childList: true, characterData: true });`,
      });
      await page.goto(`http://127.0.0.1:${h.app.endpoints.apiPort}/ui/#/i/rack`);
      const deviceId = h.sims.rack.deviceIds()[0]!;
      const card = page.locator(`li[data-outlet="${deviceId}/2"]`);
      await card.waitFor({ timeout: 20_000 });
      await waitFor(
        async () => (await page.evaluate<number>("window.streamsOpened")) >= 4,
        "three ends of age",
        20_000,
      );
      h.sims.rack.setMeasurementRaw(deviceId, 2, "realPower", "321");
      await waitFor(
        async () => ((await card.textContent()) ?? "").includes("321 W"),
        "a value after the reconnects",
        20_000,
      );
      const texts = await page.evaluate<string[]>("window.badgeTexts");
      assert.ok(texts.includes("Live"), texts.join(" | "));
      assert.ok(!texts.includes("Reconnecting…"), `the badge never said Reconnecting…: ${texts.join(" | ")}`);
      assert.equal(await page.locator(".live").textContent(), "Live");
      assert.ok(h.app.console!.streams <= 1, "the old streams are gone");
    },
  );
});

describe("a client that stops reading", () => {
  let h: AppHarness<"rack">;

  before(async () => {
    h = await harness(true, { maxBufferedBytes: 256 * 1024 });
    await h.waitForPoll("rack");
  });
  after(() => h?.close());

  test("is disconnected through the API worker: its TCP connection closes, a reading one keeps its stream", async () => {
    const port = h.app.endpoints.apiPort!;
    const stalled = new RawStream(port, "127.0.0.6", false);
    const reader = new RawStream(port, "127.0.0.7", true);
    try {
      await Promise.all([stalled.answered, reader.answered]);
      assert.equal(stalled.status, 200);
      const feed = h.app.console!;
      await waitFor(() => feed.streams === 2, "both streams open");
      // Snapshot events a millisecond apart (each one a few KB to every stream): the stalled
      // client's kernel buffers fill, then the worker's, then the service's, while the reading
      // client keeps up even when the machine is busy (as fast as the store takes them, a starved
      // worker thread could back up both).
      for (let i = 0; i < 100_000 && feed.streams === 2; i++) {
        h.app.store.recordSuccess("rack", parseApiTree(singleUnitTree(), "rack", Date.now()));
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      assert.equal(feed.streams, 1, "the stalled stream was dropped");
      assert.equal(feed.streamsOf("127.0.0.6"), 0);
      const line = h
        .logs()
        .find((l) => l.msg === "console feed: closed an event stream whose client does not read");
      assert.equal(line?.client, "127.0.0.6");
      stalled.socket.resume(); // what was queued, then the close
      await waitFor(() => stalled.closed, "the stalled client's connection closed", 20_000);
      assert.ok(!reader.closed, "the reading client keeps its stream");
    } finally {
      stalled.close();
      reader.close();
    }
  });
});
