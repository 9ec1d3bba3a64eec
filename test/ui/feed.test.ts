/**
 * The console feed's bounds without the rest of the service: a client that stops reading its event
 * stream is disconnected once its socket buffers too much (others keep theirs), and the power history
 * is a fixed ring per outlet that forgets outlets gone for a whole window.
 */
import assert from "node:assert/strict";
import { get } from "node:http";
import { connect, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { setImmediate as tick } from "node:timers/promises";
import { startApiServer } from "../../src/http/api/server.js";
import type { RunningListener } from "../../src/http/listener.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import { ConsoleFeed } from "../../src/ui/feed.js";
import { HISTORY_WINDOW_MS, PowerHistory } from "../../src/ui/history.js";
import { consoleRoutes } from "../../src/ui/routes.js";
import { singleUnitTree } from "../../testkit/fixtures/geist-trees.js";
import { configFrom, harness, type Harness } from "../../testkit/http-harness.js";
import { waitFor } from "../../testkit/wait.js";

const CONFIG = `
Pdus:
  rack:
    Connection: { Host: 192.0.2.10 }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "feed-test-key-0123456789abcdefgh" }
`;

let h: Harness;
let feed: ConsoleFeed;
let api: RunningListener;
const sockets: Socket[] = [];

before(async () => {
  h = harness(await configFrom(CONFIG));
  feed = new ConsoleFeed({
    bus: h.bus,
    store: h.store,
    config: () => h.deps.config,
    logger: h.deps.logger,
    maxBufferedBytes: 64 * 1024,
  });
  feed.start();
  h.store.recordSuccess("rack", parseApiTree(singleUnitTree(), "rack", h.clock.now));
  api = await startApiServer({ ...h.deps, consoleRoutes: consoleRoutes(feed) });
});

after(async () => {
  for (const s of sockets) s.destroy();
  await api?.close();
  feed?.close();
});

/** A raw client of the event stream; `read: false` never reads what the service sends. */
function openStream(
  read: boolean,
): Promise<{ socket: Socket; received: () => number; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let closed = false;
    const socket = connect({ host: "127.0.0.1", port: api.port }, () => {
      socket.write("GET /api/v1/events?instance=rack HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      if (!read) socket.pause();
      resolve({ socket, received: () => received, closed: () => closed });
    });
    sockets.push(socket);
    socket.on("data", (chunk: Buffer) => (received += chunk.length));
    socket.on("close", () => (closed = true));
    socket.on("error", () => (closed = true));
    socket.once("error", reject);
  });
}

test("a client that stops reading is disconnected; a reading one keeps its stream", async () => {
  const reader = await openStream(true);
  const stalled = await openStream(false);
  await waitFor(() => feed.streams === 2, "both streams open");
  // Polls go on: each sends a snapshot event to both. The stalled one fills the socket buffers,
  // then the service's buffer, and is closed at 64 KiB queued.
  for (let i = 0; i < 50_000 && feed.streams === 2; i++) {
    h.clock.now += 1000;
    h.store.recordSuccess("rack", parseApiTree(singleUnitTree(), "rack", h.clock.now));
    await tick();
  }
  assert.equal(feed.streams, 1, "the stalled stream was closed");
  stalled.socket.resume(); // reads what was queued, then the end the service sent
  await waitFor(() => stalled.closed(), "the stalled socket closed", 10_000);
  assert.ok(!reader.closed(), "the reading client keeps its stream");
  assert.ok(reader.received() > 64 * 1024, "and got the events");
  assert.ok(
    h.log.lines.some((l) => l.msg === "console feed: closed an event stream whose client does not read"),
  );
});

test("a new stream gets every instance's current snapshot, however many, without tripping the buffer limit", async (t) => {
  const ids = Array.from({ length: 40 }, (_, i) => `pdu-${i}`);
  const yaml = `Pdus:\n${ids.map((id) => `  ${id}:\n    Connection: { Host: 192.0.2.10 }`).join("\n")}\nApi: { Enabled: true, Bind: 127.0.0.1, Port: 0 }\n`;
  const fleet = harness(await configFrom(yaml));
  for (const id of ids) fleet.store.recordSuccess(id, parseApiTree(singleUnitTree(), id, fleet.clock.now));
  const small = new ConsoleFeed({
    bus: fleet.bus,
    store: fleet.store,
    config: () => fleet.deps.config,
    logger: fleet.deps.logger,
    maxBufferedBytes: 16 * 1024, // far less than the 40 snapshots together
  });
  small.start();
  const listener = await startApiServer({ ...fleet.deps, consoleRoutes: consoleRoutes(small) });
  t.after(async () => {
    await listener.close();
    small.close();
  });
  let text = "";
  const seen = () => (text.match(/^event: snapshot$/gm) ?? []).length;
  await new Promise<void>((resolve, reject) => {
    const request = get(`http://127.0.0.1:${listener.port}/api/v1/events`, (response) => {
      assert.equal(response.statusCode, 200);
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
        if (seen() >= ids.length) {
          request.destroy();
          resolve();
        }
      });
      response.on("end", () => reject(new Error(`the stream ended after ${seen()} snapshots`)));
    });
    request.on("error", reject);
  });
  for (const id of ids) assert.ok(text.includes(`"instanceId":"${id}"`), id);
});

const snapshotWith = (instanceId: string, at: number, outlets: [string, number, number | null][]): Snapshot =>
  ({
    instanceId,
    timestamp: at,
    mode: "single",
    groups: [],
    devices: [...new Set(outlets.map(([d]) => d))].map((id) => ({
      id,
      outlets: outlets
        .filter(([d]) => d === id)
        .map(([, index, watts]) => ({
          index,
          measurements: [{ type: "realPower", value: watts }],
        })),
    })),
  }) as unknown as Snapshot;

test("the power history is a fixed ring: an hour at the poll interval, old outlets forgotten", () => {
  const interval = 600; // 10 min: 7 slots for an hour
  const history = new PowerHistory(() => interval);
  const t0 = 1_700_000_000_000;
  for (let i = 0; i < 20; i++) {
    const outlets: [string, number, number | null][] = [["D1", 0, i]];
    if (i < 3) outlets.push(["OLD", 0, 5]);
    if (i === 19) outlets.push(["D1", 1, null]);
    history.record(snapshotWith("rack", t0 + i * interval * 1000, outlets));
  }
  const now = t0 + 19 * interval * 1000;
  const d1 = history.query("rack", "D1", 0, now)!;
  assert.deepEqual(d1.values, [13, 14, 15, 16, 17, 18, 19], "the last hour, oldest first");
  assert.equal(d1.times.at(-1), now);
  assert.ok(d1.times.every((t) => t >= now - HISTORY_WINDOW_MS));
  assert.deepEqual(
    history.query("rack", "D1", 1, now)!.values,
    Array(7).fill(null),
    "absent or no number: null",
  );
  assert.equal(history.query("rack", "OLD", 0, now), null, "an outlet gone for a window is dropped");
  assert.equal(history.query("rack", "D1", 9, now), null);
  assert.equal(history.bytes(), 7 * 8 + 2 * 7 * 4, "one Float64 time ring + one Float32 ring per outlet");
});
