/**
 * Degrade, don't fail, through the real parts: a real HTTP listener answers `GET /oneview` with the
 * wire fixture, damaged. A malformed optional part: every poll succeeds, the rest of the snapshot
 * is kept, the dropped part is logged once per path (not once per poll) and shows under the
 * instance in /health/integrations with its path. A malformed essential part: the poll fails with
 * the JSON path, the previous snapshot stays, and the poller keeps going.
 */
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { startHealthServer } from "../../src/http/health/server.js";
import type { RunningListener } from "../../src/http/listener.js";
import { findGroup } from "../../src/pdu/model.js";
import { GeistClient } from "../../src/pdu/geist/client.js";
import { Poller } from "../../src/poller/scheduler.js";
import { MAX_LOGGED_PATHS, ParseWarningLog } from "../../src/poller/warnings.js";
import { wireOneView, type Json } from "../../testkit/fixtures/wire.js";
import { Client, configFrom, harness, type Harness } from "../../testkit/http-harness.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { waitFor } from "../../testkit/wait.js";
import { parseOneView } from "../../src/pdu/geist/parse.js";

const at = (tree: Json, ...keys: string[]): Json => keys.reduce((t, k) => t[k] as Json, tree);

/** The cluster fixture with group 2's rollup node replaced by a string and a member entity by a number. */
function damagedOptional(): Json {
  const tree = wireOneView();
  at(tree, "group", "2", "entity", "outlet")["0"] = "n/a";
  at(tree, "host", "0019850c2711", "cache", "dev", "0019850C27110002", "entity").breaker0 = 42;
  return tree;
}

const OPTIONAL_WARNINGS = [
  {
    path: "$.host.0019850c2711.cache.dev.0019850C27110002.entity.breaker0",
    problem: "entity is not an object; dropped",
  },
  { path: "$.group.2.entity.outlet.0", problem: "rollup node is not an object; dropped" },
];

describe("malformed parts of a real answer, polled", () => {
  let answer: () => Json = damagedOptional;
  let gets = 0;
  let pdu: http.Server;
  let port = 0;
  let h: Harness;
  let health: RunningListener;
  let client: GeistClient;
  let poller: Poller;
  const log = new LogCapture();

  before(async () => {
    pdu = http.createServer((req, res) => {
      const data = req.url === "/api/conf/oneview/enabled" ? true : req.url === "/oneview" ? answer() : null;
      if (req.url === "/oneview") gets++;
      const body = JSON.stringify(
        data === null ? { retCode: 3001, retMsg: "" } : { retCode: 0, retMsg: "", data },
      );
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
    await new Promise<void>((resolve) => pdu.listen(0, "127.0.0.1", resolve));
    port = (pdu.address() as AddressInfo).port;
    const config = await configFrom(`
Pdus:
  row3:
    Connection: { Host: 127.0.0.1, Port: ${port}, Scheme: http, Timeout: 5 }
    PollInterval: 1
Api: { Enabled: false }
Health: { Bind: 127.0.0.1, Port: 0 }
`);
    h = harness(config);
    const instance = config.instances[0];
    assert.ok(instance);
    client = new GeistClient(instance);
    poller = new Poller([{ id: "row3", intervalMs: 60, poll: (signal) => client.poll(signal) }], h.store, {
      logger: log.logger,
      bus: h.bus,
    });
    health = await startHealthServer(h.deps);
  });
  after(async () => {
    await poller?.stop();
    await client?.close();
    await health?.close();
    h?.store.close();
    await new Promise<void>((resolve) => pdu.close(() => resolve()));
  });

  const dropLines = () => log.lines.filter((l) => String(l.msg).includes("malformed optional part dropped"));

  it("publishes everything else, logs each dropped part once and shows it in /health/integrations", async () => {
    poller.start();
    await waitFor(
      () => gets >= 4 && (h.store.get("row3")?.snapshot ?? false),
      "four polls of the damaged answer",
    );
    const status = h.store.get("row3");
    assert.equal(status?.consecutiveFailures, 0, "every poll succeeded");
    const snapshot = status?.snapshot;
    assert.ok(snapshot);
    assert.deepEqual(
      snapshot.devices.map((d) => [d.id, d.outlets.length, d.entities.map((e) => e.key).join(",")]),
      [
        ["0019850C269E0001", 4, "breaker0,phase0,total0"],
        ["0019850C27110002", 4, "phase0,total0"],
      ],
    );
    assert.equal(findGroup(snapshot, "2")?.members.length, 3, "group 2 keeps its members");
    assert.deepEqual(findGroup(snapshot, "2")?.measurements, [], "its rollup node was dropped");
    assert.equal(findGroup(snapshot, "total")?.measurements.length, 2, "total's rollups are kept");
    assert.deepEqual(snapshot.warnings, OPTIONAL_WARNINGS);

    assert.deepEqual(
      dropLines().map((l) => [l.instance, l.path, l.problem]),
      OPTIONAL_WARNINGS.map((w) => ["row3", w.path, w.problem]),
      "logged once per path, not once per poll",
    );

    const r = await new Client(health.port).get("/health/integrations");
    assert.equal(r.status, 200);
    const pdu = r.json<{
      integrations: Record<string, { status: string; detail: string; warnings?: unknown }>;
    }>().integrations["pdu:row3"];
    assert.equal(pdu?.status, "degraded");
    assert.match(
      pdu?.detail ?? "",
      /^last successful poll -?\d+s ago; 2 malformed optional part\(s\) of its answer dropped, first: \$\.host/,
    );
    assert.deepEqual(pdu?.warnings, OPTIONAL_WARNINGS);
  });

  it("a malformed essential part fails the poll with its path, keeps the snapshot, and the poller goes on", async () => {
    const before = h.store.get("row3")?.snapshot;
    answer = () => {
      const tree = wireOneView();
      at(tree, "host", "0019850c2711", "cache", "dev", "0019850C27110002", "outlet")["2"] = "on";
      return tree;
    };
    const failed = await waitFor(() => {
      const s = h.store.get("row3");
      return s !== undefined && s.consecutiveFailures >= 2 && s;
    }, "two failed polls");
    assert.equal(
      failed.lastError,
      `GET /oneview from 127.0.0.1:${port}: $.host.0019850c2711.cache.dev.0019850C27110002.outlet.2: outlet is not an object`,
    );
    assert.equal(failed.snapshot, before, "the previous snapshot is kept");

    answer = wireOneView;
    const healed = await waitFor(() => {
      const s = h.store.get("row3");
      return s !== undefined && s.consecutiveFailures === 0 && s.snapshot !== before && s;
    }, "a good poll again");
    assert.deepEqual(healed.snapshot?.warnings, []);
    const r = await new Client(health.port).get("/health/integrations");
    const pdu = r.json<{ integrations: Record<string, { status: string; warnings?: unknown }> }>()
      .integrations["pdu:row3"];
    assert.equal(pdu?.status, "healthy");
    assert.equal(pdu?.warnings, undefined);
  });
});

describe("ParseWarningLog", () => {
  it("remembers at most MAX_LOGGED_PATHS paths per instance, then says so once", () => {
    const capture = new LogCapture();
    const warnings = new ParseWarningLog(capture.logger);
    const base = parseOneView(wireOneView(), "x", 1);
    for (let i = 0; i < MAX_LOGGED_PATHS + 50; i++) {
      warnings.note("x", {
        ...base,
        warnings: [{ path: `$.group.g${i}.entity`, problem: "expected an object" }],
      });
      warnings.note("x", {
        ...base,
        warnings: [{ path: `$.group.g${i}.entity`, problem: "expected an object" }],
      });
    }
    const msgs = capture.lines.map((l) => String(l.msg));
    assert.equal(msgs.filter((m) => m.includes("malformed optional part dropped")).length, MAX_LOGGED_PATHS);
    assert.equal(msgs.filter((m) => m.includes("are not logged")).length, 1);
    warnings.note("y", { ...base, warnings: [{ path: "$.sys", problem: "expected an object" }] });
    assert.equal(capture.raw.length, MAX_LOGGED_PATHS + 2, "another instance has its own memory");
  });
});
