/**
 * `GET /api/v1/events` and the outlet history against the whole service polling the simulator: a
 * change at the simulator reaches an open stream within one poll, control outcomes arrive as
 * `control` events, the number of streams per client is bounded (429 problem), the history answers the
 * outlet's polled power, and the console's page and assets carry their cache and CSP headers.
 */
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import type { ControlEventData, SnapshotEventData, StatusEventData } from "../../src/ui/wire.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "events-test-key-0123456789abcdef"; // 32 characters
const POLL_S = 1;

let h: AppHarness<"rack" | "hid">;
let base: string;

before(async () => {
  h = await startAppHarness<"rack" | "hid">({
    sims: { rack: { outlets: 4, seed: 7 }, hid: { outlets: 3, seed: 8 } },
    yaml: (sims) =>
      appYaml({
        pdus: [
          pduYaml("rack", sims.rack, { actionsEnabled: true, pollInterval: POLL_S }),
          // Outlet 1 and the first entity hidden by the overrides.
          pduYaml("hid", sims.hid, { pollInterval: POLL_S }) +
            `\n    Overrides:\n      Outlets:\n        ${JSON.stringify(sims.hid.deviceIds()[0])}: { "1": { Hidden: true } }`,
        ],
        api: { key: KEY },
      }),
  });
  await h.waitForPoll("rack");
  await h.waitForPoll("hid");
  base = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
});

after(async () => {
  await h?.close();
});

interface SseEvent {
  readonly event: string;
  readonly data: unknown;
}

/** A real event-stream reader over node:http: collects parsed events until closed. */
class EventStream {
  readonly events: SseEvent[] = [];
  status = 0;
  headers: http.IncomingHttpHeaders = {};
  body = "";
  ended = false;
  #request: http.ClientRequest | null = null;
  readonly ready: Promise<void>;

  constructor(path: string) {
    let buffer = "";
    this.ready = new Promise((resolve, reject) => {
      this.#request = http.get(`${base}${path}`, (response) => {
        this.status = response.statusCode ?? 0;
        this.headers = response.headers;
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          this.body += chunk;
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event !== undefined && data !== undefined)
              this.events.push({ event, data: JSON.parse(data) });
          }
        });
        response.on("end", () => (this.ended = true));
        response.on("error", () => (this.ended = true));
        resolve();
      });
      this.#request.on("error", reject);
    });
  }

  of<T>(name: string): T[] {
    return this.events.filter((e) => e.event === name).map((e) => e.data as T);
  }

  close(): void {
    this.#request?.destroy();
  }
}

const power = (s: SnapshotEventData, deviceId: string, index: number) =>
  s.devices
    .find((d) => d.id === deviceId)
    ?.outlets.find((o) => o.index === index)
    ?.measurements.find((m) => m.type === "realPower")?.value;

test("a change at the simulator reaches an open event stream within one poll", async (t) => {
  const stream = new EventStream("/api/v1/events?instance=rack");
  t.after(() => stream.close());
  await stream.ready;
  assert.equal(stream.status, 200);
  assert.match(String(stream.headers["content-type"]), /^text\/event-stream/);
  assert.equal(stream.headers["cache-control"], "no-store");
  await waitFor(() => stream.of<SnapshotEventData>("snapshot").length > 0, "the current snapshot on connect");
  const status = stream.of<StatusEventData>("status")[0]!;
  assert.deepEqual(
    status.instances.filter((i) => i.id === "rack").map((i) => [i.id, i.status, i.devices, i.outlets]),
    [["rack", "online", 1, 4]],
  );

  const deviceId = h.sims.rack.deviceIds()[0]!;
  const seen = stream.of("snapshot").length;
  h.sims.rack.setMeasurementRaw(deviceId, 2, "realPower", "777.7");
  // The poll in flight when the value changed may predate it; the next one must carry it.
  const snapshots = await waitFor(
    () => {
      const after = stream.of<SnapshotEventData>("snapshot").slice(seen);
      return after.length >= 2 || after.some((s) => power(s, deviceId, 2) === 777.7) ? after : null;
    },
    "two snapshot events after the change",
    POLL_S * 1000 * 2 + 8000,
  );
  assert.ok(
    snapshots.slice(0, 2).some((s) => power(s, deviceId, 2) === 777.7),
    "the value is in the first or second snapshot event after the change (one poll)",
  );
  assert.ok(stream.of<StatusEventData>("status").length > 1, "status events follow the polls");
});

test("control outcomes arrive as control events; snapshots=false leaves snapshots out", async (t) => {
  const stream = new EventStream("/api/v1/events?snapshots=false");
  t.after(() => stream.close());
  await stream.ready;
  await waitFor(() => stream.of("status").length > 0, "the status on connect");
  const deviceId = h.sims.rack.deviceIds()[0]!;
  const answer = await h.api.post(
    `/api/v1/instances/rack/outlets/${deviceId}/1/control`,
    { action: "off" },
    { "x-api-key": KEY },
  );
  assert.equal(answer.status, 200);
  const events = await waitFor(() => {
    const list = stream.of<ControlEventData>("control");
    return list.length > 0 ? list : null;
  }, "a control event");
  assert.deepEqual(
    { ...events[0]!, atUtc: "" },
    {
      instanceId: "rack",
      target: { kind: "outlet", deviceId, index: 1 },
      action: "off",
      ok: true,
      status: 200,
      detail: null,
      source: "rest",
      user: null,
      atUtc: "",
    },
  );
  await waitFor(() => h.sims.rack.outlet(deviceId, 1).state === "off", "the outlet off");
  assert.equal(stream.of("snapshot").length, 0, "no snapshot events with snapshots=false");
});

test("the number of open streams per client is bounded; beyond it a 429 problem", async (t) => {
  const feed = h.app.console!;
  const streams: EventStream[] = [];
  t.after(() => streams.forEach((s) => s.close()));
  await waitFor(() => feed.streams === 0, "the streams of earlier tests closed");
  for (let i = 0; i < feed.maxStreamsPerClient; i++) {
    const s = new EventStream("/api/v1/events?snapshots=false");
    streams.push(s);
    await s.ready;
  }
  await waitFor(() => feed.streams === feed.maxStreamsPerClient, "every stream open");
  const refused = await h.api.get("/api/v1/events");
  assert.equal(refused.status, 429);
  assert.match(String(refused.headers["content-type"]), /^application\/problem\+json/);
  assert.match(refused.json<{ detail: string }>().detail, /event streams are open from 127\.0\.0\.1 already/);
  assert.ok(Number(refused.headers["retry-after"]) > 0);
  streams.pop()!.close();
  await waitFor(() => feed.streams < feed.maxStreamsPerClient, "a stream closed frees a place");
});

test("hidden outlets are marked hidden in snapshot events, as in REST, and left out of the status counts", async (t) => {
  const stream = new EventStream("/api/v1/events?instance=hid");
  t.after(() => stream.close());
  await stream.ready;
  const snapshot = await waitFor(
    () => stream.of<SnapshotEventData>("snapshot")[0],
    "the snapshot on connect",
  );
  const outlets = snapshot.devices[0]!.outlets;
  assert.deepEqual(
    outlets.map((o) => [o.index, o.hidden]),
    [
      [0, undefined],
      [1, true],
      [2, undefined],
    ],
  );
  assert.ok(!("hidden" in outlets[0]!), "no hidden key on what is shown");
  // REST marks the same outlet.
  const readings = (await h.api.get("/api/v1/readings?instance=hid")).json<
    { outletIndex: number | null; hidden?: true }[]
  >();
  assert.ok(readings.some((r) => r.outletIndex === 1 && r.hidden === true));
  assert.ok(readings.every((r) => (r.outletIndex === 1) === (r.hidden === true)));
  const status = stream.of<StatusEventData>("status")[0]!.instances.find((i) => i.id === "hid")!;
  assert.equal(status.outlets, 2, "the hidden outlet is not counted");
  const shown = outlets
    .filter((o) => o.hidden !== true)
    .reduce((sum, o) => sum + (o.measurements.find((m) => m.type === "realPower")?.value ?? 0), 0);
  assert.equal(status.powerW, Math.round(shown * 100) / 100, "nor its power");
});

test("bad event-stream requests are problems", async () => {
  const unknown = await h.api.get("/api/v1/events?instance=nope");
  assert.equal(unknown.status, 404);
  assert.match(unknown.json<{ detail: string }>().detail, /unknown instance "nope"/);
  const extra = await h.api.get("/api/v1/events?foo=1");
  assert.equal(extra.status, 400);
  const bad = await h.api.get("/api/v1/events?snapshots=0");
  assert.equal(bad.status, 400);
});

test("the outlet history answers the polled power of the last hour", async () => {
  const deviceId = h.sims.rack.deviceIds()[0]!;
  h.sims.rack.setMeasurementRaw(deviceId, 3, "realPower", "55.5");
  await h.waitForPoll("rack", Date.now() + 50);
  const answer = await h.api.get(`/api/v1/instances/rack/outlets/${deviceId}/3/history`);
  assert.equal(answer.status, 200);
  const body = answer.json<{ times: number[]; values: (number | null)[]; units: string }>();
  assert.equal(body.units, "W");
  assert.equal(body.times.length, body.values.length);
  assert.ok(body.times.length >= 2);
  assert.deepEqual(
    [...body.times].sort((a, b) => a - b),
    body.times,
    "oldest first",
  );
  assert.equal(body.values.at(-1), 55.5);
  for (const [path, status] of [
    [`/api/v1/instances/rack/outlets/${deviceId}/01/history`, 400],
    [`/api/v1/instances/rack/outlets/${deviceId}/99/history`, 404],
    [`/api/v1/instances/nope/outlets/${deviceId}/1/history`, 404],
    // The rules of every outlet route: an instance id and a device id as the control routes take them.
    [`/api/v1/instances/no%20pe/outlets/${deviceId}/1/history`, 400],
    [`/api/v1/instances/rack/outlets/%2E%2E/1/history`, 400],
    [`/api/v1/instances/rack/outlets/${"d".repeat(129)}/1/history`, 400],
  ] as const) {
    const r = await h.api.get(path);
    assert.equal(r.status, status, path);
    assert.match(String(r.headers["content-type"]), /^application\/problem\+json/);
  }
});

test("the console page is revalidated, its hashed assets cached for good, all under CSP 'self'", async () => {
  const page = await h.api.get("/ui/");
  assert.equal(page.status, 200);
  assert.equal(page.headers["cache-control"], "no-cache");
  assert.match(String(page.headers["content-security-policy"]), /^default-src 'self';/);
  const assets = [...page.text.matchAll(/\/ui\/assets\/(console-[A-Z0-9]+\.(?:js|css))/g)].map((m) => m[1]!);
  assert.equal(assets.length, 2, page.text);
  assert.doesNotMatch(page.text, /https?:\/\//, "nothing from elsewhere");
  for (const name of assets) {
    const asset = await h.api.get(`/ui/assets/${name}`);
    assert.equal(asset.status, 200);
    assert.equal(asset.headers["cache-control"], "public, max-age=31536000, immutable");
  }
  assert.equal((await h.api.get("/ui/assets/console-NOPE.js")).status, 404);
  // With the console on, `/` is the console (the API docs stay at /docs/v1).
  const root = await h.api.get("/");
  assert.equal(root.status, 302);
  assert.equal(root.headers.location, "/ui/");
  assert.equal((await h.api.get("/docs/v1")).status, 200);
  const doc = (await h.api.get("/openapi/v1.json")).json<{
    info: { description: string };
    paths: Record<string, unknown>;
  }>();
  assert.ok("/api/v1/events" in doc.paths, "the event stream is in the OpenAPI document");
  assert.match(doc.info.description, /\/ui\//, "the docs link to the console");
});
