/**
 * The health listener of a replica (`Cluster.Enabled`) on a real port, with the cluster's state set
 * by the test: readiness follows MQTT and the engine (not polls), the `cluster` entry's rules and
 * fields as served (the response schema keeps them), the PDU entries limited to the instances held,
 * and no credentials of a URL in anything the report repeats. The replicas' test
 * (test/cluster/engine-outage.test.ts) shows the same with real processes and a real etcd.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startHealthServer } from "../../src/http/health/server.js";
import { clusterIntegration, withoutUserInfo } from "../../src/http/health/status.js";
import type { RunningListener } from "../../src/http/listener.js";
import type { ClusterHealth } from "../../src/http/types.js";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import { wireApi } from "../../testkit/fixtures/wire.js";
import { Client, configFrom, harness, type Harness } from "../../testkit/http-harness.js";

const T0 = Date.UTC(2025, 5, 1, 6, 0, 0);

let h: Harness;
let health: RunningListener;
let client: Client;
let cluster: ClusterHealth;

const RUNNING: ClusterHealth = {
  member: "r1",
  backend: "etcd",
  engine: "etcd http://127.0.0.1:2379 /pdu-bridge/",
  state: "running",
  blocked: null,
  reachable: true,
  lastAnswerAgeMs: 300,
  renewDeadlineMs: 10_000,
  ready: true,
  bucketCount: 4,
  buckets: [1, 3],
  instances: ["held"],
  members: [
    { name: "r1", ready: true, self: true },
    { name: "r2", ready: false, self: false },
  ],
  transitions: 3,
  lastError: null,
  silent: [],
  unpolled: [],
  unpolledInstances: [],
};

before(async () => {
  const config = await configFrom(`
Mqtt: { Connection: { Host: 127.0.0.1 } }
Pdus:
  held:
    Connection: { Host: 192.0.2.1 }
  elsewhere:
    Connection: { Host: 192.0.2.2 }
Api: { Enabled: false }
Health: { Bind: 127.0.0.1, Port: 0 }
Cluster: { Enabled: true, Backend: etcd, MemberName: r1, Buckets: 4 }
`);
  h = harness(config, { now: T0 });
  h.mqtt = { connected: true, broker: "mqtt://127.0.0.1:1883", embedded: false, lastError: null, since: T0 };
  cluster = RUNNING;
  health = await startHealthServer({ ...h.deps, clusterStatus: () => cluster });
  client = new Client(health.port);
});

after(async () => {
  await health?.close();
  h?.store.close();
});

interface Report {
  status: string;
  integrations: Record<string, { status: string; detail: string } & Record<string, unknown>>;
}

test("/readyz of a replica: MQTT connected and the engine reachable; no poll needed (a standby polls nothing)", async () => {
  cluster = RUNNING;
  let r = await client.get("/readyz");
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, "READY");

  cluster = { ...RUNNING, reachable: false, lastAnswerAgeMs: 12_400, buckets: [], instances: [] };
  r = await client.get("/readyz");
  assert.equal(r.status, 503);
  assert.equal(r.text, "NOT READY: coordination engine not reachable (last answer 12s ago, limit 10s)");

  cluster = { ...RUNNING, reachable: false, lastAnswerAgeMs: null, renewDeadlineMs: 500 };
  r = await client.get("/readyz");
  assert.equal(r.text, "NOT READY: coordination engine not reachable (no answer yet, limit 0.5s)");

  // MQTT first, as in one process.
  h.mqtt = { ...h.mqtt, connected: false };
  r = await client.get("/readyz");
  assert.equal(r.text, "NOT READY: MQTT not connected");
  h.mqtt = { ...h.mqtt, connected: true };

  // Blocked (another bucket count) is still ready: a rolling change of Buckets must be able to go on.
  cluster = { ...RUNNING, blocked: "the installation runs with 8 buckets", buckets: [], instances: [] };
  r = await client.get("/readyz");
  assert.equal(r.status, 200, r.text);
});

test("/health/integrations: the cluster entry with its fields, and only the PDUs this replica holds", async () => {
  h.store.recordSuccess("held", parseApiTree(wireApi(), "held", h.clock.now));
  h.homeAssistant = { ...h.homeAssistant, lastDiscoveryUtc: T0 };
  cluster = RUNNING;
  const r = await client.get("/health/integrations");
  assert.equal(r.status, 200, r.text);
  const report = r.json<Report>();
  assert.deepEqual(Object.keys(report.integrations).sort(), [
    "api",
    "cluster",
    "homeassistant",
    "mqtt",
    "pdu:held",
  ]);
  assert.equal(report.status, "healthy");
  assert.deepEqual(report.integrations.cluster, {
    status: "healthy",
    detail: "member r1, holds 2 of 4 buckets (1 instances); 2 member(s) seen; 3 lease transition(s)",
    member: "r1",
    backend: "etcd",
    engine: "etcd http://127.0.0.1:2379 /pdu-bridge/",
    buckets: [1, 3],
    instances: ["held"],
    members: [
      { name: "r1", ready: true },
      { name: "r2", ready: false },
    ],
    transitions: 3,
    lastError: null,
    stoppedRenewing: [],
    unpolled: [],
  });
});

test("/health/integrations: a member that stopped renewing and the instances nobody polls, until they are taken over", async () => {
  h.store.recordSuccess("held", parseApiTree(wireApi(), "held", h.clock.now));
  h.homeAssistant = { ...h.homeAssistant, lastDiscoveryUtc: T0 };
  cluster = {
    ...RUNNING,
    silent: [{ name: "r2", silentForMs: 7_400 }],
    unpolled: [
      { bucket: 0, holder: "r2", silentForMs: 7_400, freeInMs: 7_600 },
      { bucket: 2, holder: null, silentForMs: null, freeInMs: 0 },
    ],
    unpolledInstances: [
      { id: "elsewhere", bucket: 0, holder: "r2" },
      { id: "orphan", bucket: 2, holder: null },
    ],
  };
  let r = await client.get("/health/integrations");
  assert.equal(r.status, 200, r.text);
  let report = r.json<Report>();
  assert.equal(report.status, "degraded", "instances polled by nobody: not healthy");
  const entry = report.integrations.cluster!;
  assert.equal(entry.status, "degraded");
  assert.equal(
    entry.detail,
    "member r1, holds 2 of 4 buckets (1 instances); 2 member(s) seen; 3 lease transition(s); " +
      "member r2 stopped renewing 7s ago; 2 instance(s) polled by nobody until a replica takes them over: " +
      "elsewhere, orphan (held by r2, which stopped renewing: its lease runs out within 8s; held by nobody)",
  );
  assert.deepEqual(entry.stoppedRenewing, [{ member: "r2", secondsAgo: 7 }]);
  assert.deepEqual(entry.unpolled, [
    { instance: "elsewhere", holder: "r2" },
    { instance: "orphan", holder: null },
  ]);

  // Taken over: every instance polled again; the member that went is still named while its lease is kept.
  cluster = {
    ...cluster,
    unpolled: [],
    unpolledInstances: [],
    silent: [{ name: "r2", silentForMs: 21_000 }],
  };
  r = await client.get("/health/integrations");
  report = r.json<Report>();
  assert.equal(report.status, "healthy");
  assert.equal(report.integrations.cluster!.status, "healthy");
  assert.match(report.integrations.cluster!.detail, /; member r2 stopped renewing 21s ago$/);
  assert.deepEqual(report.integrations.cluster!.unpolled, []);
});

test("the engine unreachable: the cluster entry and the whole report unhealthy (503), the error without credentials", async () => {
  cluster = {
    ...RUNNING,
    reachable: false,
    lastAnswerAgeMs: 3_100,
    renewDeadlineMs: 2_000,
    buckets: [],
    instances: [],
    lastError:
      "no etcd endpoint answered /v3/kv/range (https://root:s3cret@10.0.0.5:2379: connect ECONNREFUSED)",
  };
  const r = await client.get("/health/integrations");
  assert.equal(r.status, 503);
  const report = r.json<Report>();
  assert.equal(report.status, "unhealthy");
  const entry = report.integrations.cluster!;
  assert.equal(entry.status, "unhealthy");
  assert.equal(
    entry.detail,
    "coordination engine not reachable (last answer 3s ago, limit 2s): no etcd endpoint answered /v3/kv/range " +
      "(https://10.0.0.5:2379: connect ECONNREFUSED); member r1, holds 0 of 4 buckets (0 instances); " +
      "2 member(s) seen; 3 lease transition(s)",
  );
  assert.equal(
    entry.lastError,
    "no etcd endpoint answered /v3/kv/range (https://10.0.0.5:2379: connect ECONNREFUSED)",
  );
  assert.doesNotMatch(r.text, /s3cret|root:/);
  assert.equal("pdu:held" in report.integrations, false, "no PDU entries while it holds nothing");
});

test("the cluster entry's other states: starting and stopping degraded, blocked degraded with why", () => {
  assert.equal(clusterIntegration({ ...RUNNING, state: "starting" }).status, "degraded");
  assert.match(clusterIntegration({ ...RUNNING, state: "stopping" }).detail, /^stopping; member r1/);
  const blocked = clusterIntegration({ ...RUNNING, blocked: "the installation runs with 8 buckets" });
  assert.equal(blocked.status, "degraded");
  assert.match(blocked.detail, /^holds nothing: the installation runs with 8 buckets; /);
  const long = clusterIntegration({ ...RUNNING, reachable: false, lastError: "x".repeat(1000) });
  assert.equal(long.lastError?.length, 300);
});

test("withoutUserInfo takes the user info out of every URL and leaves the rest", () => {
  assert.equal(
    withoutUserInfo("http://a:b@h:1/x and HTTPS://u@h2 and mailto:x@y and http://h3/p@q"),
    "http://h:1/x and HTTPS://h2 and mailto:x@y and http://h3/p@q",
  );
});
