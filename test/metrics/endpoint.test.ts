/**
 * `GET /metrics` on the health listener (contract §8) through the real composed App: real
 * simulators (a OneView cluster with pinned values, a dead PDU, one that fails after being polled),
 * the REST API for control and fast-path requests, promtool on the text format.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parseConfigText } from "../../src/config/load.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { prometheusUnavailable, promtool } from "../../testkit/prometheus.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "metrics-test-key-5b2e";
const OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
const noPromtool = await prometheusUnavailable();

/** The samples of the exposition as `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

type Sims = "cluster" | "dead" | "flaky";

describe("GET /metrics (App)", () => {
  let h: AppHarness<Sims>;
  let dev: string;

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: {
        cluster: { oneview: { members: 1 }, outlets: 3 },
        dead: { outlets: 2, seed: 2 },
        flaky: { outlets: 2, seed: 3 },
      },
      beforeStart: async (s) => {
        dev = s.cluster.deviceIds()[0]!;
        s.cluster.setMeasurementRaw(dev, 0, "realPower", "1234.5");
        s.cluster.setMeasurementRaw(dev, 0, "energy", "12.5");
        s.cluster.setMeasurementRaw(dev, 0, "powerFactor", "94");
        s.cluster.setMeasurementRaw(dev, 1, "realPower", "n/a");
        await s.dead.setFault("refuse");
      },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("cluster", s.cluster, { actionsEnabled: true, pollInterval: 1 }),
            pduYaml("dead", s.dead, { pollInterval: 1, timeout: 1 }),
            pduYaml("flaky", s.flaky, { pollInterval: 1, timeout: 1 }),
          ],
        }),
    });
    await h.waitForPoll("cluster");
    await h.waitForPoll("flaky");
    await waitFor(() => (h.app.store.get("dead")?.consecutiveFailures ?? 0) > 0, "a failed poll of dead");
  });
  after(() => h?.close());

  it("serves the Prometheus text format with every reading of the latest snapshots", async () => {
    // The cluster's values live: scrape again if a poll landed during the scrape, so that the
    // snapshot compared below is the one the scrape read.
    let r = await h.health.get("/metrics");
    for (let before = null as unknown; before !== h.app.store.get("cluster")?.snapshot;) {
      before = h.app.store.get("cluster")?.snapshot;
      r = await h.health.get("/metrics");
    }
    assert.equal(r.status, 200);
    assert.equal(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    const m = samples(r.text);
    const outlet = (i: number) => `{instance="cluster",device="${dev}",outlet="${i}"}`;
    assert.equal(m.get(`pdu_outlet_power_watts${outlet(0)}`), 1234.5);
    assert.equal(m.get(`pdu_outlet_energy_joules_total${outlet(0)}`), 12.5 * 3.6e6, "kWh become joules");
    assert.equal(m.get(`pdu_outlet_power_factor_ratio${outlet(0)}`), 0.94, "% becomes a ratio");
    assert.equal(m.has(`pdu_outlet_power_watts${outlet(1)}`), false, "a non-numeric value is left out");
    assert.equal(m.get(`pdu_outlet_state${outlet(0)}`), 1);
    const snapshot = h.app.store.get("cluster")!.snapshot!;
    const device = snapshot.devices[0]!;
    assert.equal(
      m.get(
        `pdu_outlet_info{instance="cluster",device="${dev}",outlet="0",label="${device.outlets[0]!.label}",` +
          `name="${device.outlets[0]!.name}"}`,
      ),
      1,
    );
    assert.ok([...m.keys()].some((k) => k.startsWith(`pdu_device_info{instance="cluster",device="${dev}",`)));
    // Entities and OneView rollups, from the same snapshot.
    const total = device.entities.find((e) => e.key === "total0")!;
    const entityPower = total.measurements.find((x) => x.type === "realPower")!.value;
    assert.equal(
      m.get(`pdu_entity_power_watts{instance="cluster",device="${dev}",entity="total0"}`),
      entityPower,
    );
    // Real clusters roll up outlets per user group and PDU totals in the built-in `total` group.
    const group = snapshot.groups.find((g) => g.measurements.some((x) => x.key === "realPower"))!;
    const rollup = group.measurements.find((x) => x.key === "realPower")!;
    assert.equal(
      m.get(`pdu_group_power_watts{instance="cluster",group="${group.key}",stat="sum"}`),
      rollup.sum,
    );
    const totals = snapshot.groups.find((g) => g.key === "total")!;
    const totalPower = totals.measurements.find((x) => x.key === "pduTotalRealPower")!;
    assert.equal(
      m.get(`pdu_group_pdu_total_power_watts{instance="cluster",group="total",stat="sum"}`),
      totalPower.sum,
    );
    // The bridge itself.
    assert.equal(m.get(`pdu_bridge_up{instance="cluster"}`), 1);
    assert.equal(m.get(`pdu_bridge_up{instance="dead"}`), 0);
    assert.ok((m.get(`pdu_bridge_poll_failures_total{instance="dead"}`) ?? 0) >= 1);
    assert.ok((m.get(`pdu_bridge_poll_duration_seconds_count{instance="cluster"}`) ?? 0) >= 1);
    assert.ok((m.get(`pdu_bridge_last_successful_poll_timestamp_seconds{instance="cluster"}`) ?? 0) > 1e9);
    assert.equal(m.has(`pdu_bridge_last_successful_poll_timestamp_seconds{instance="dead"}`), false);
    assert.equal(m.get("pdu_bridge_mqtt_connected"), 1);
    assert.ok((m.get("pdu_bridge_mqtt_messages_published_total") ?? 0) > 0);
    // Discovery of every outlet, entity and group of the two live instances, retained.
    assert.ok((m.get("pdu_bridge_mqtt_discovery_configs") ?? 0) > 10);
    assert.ok(m.has("process_cpu_seconds_total"), "default process metrics");
    assert.equal(
      r.text.includes("pdu_bridge_cluster_"),
      false,
      "one process (Cluster.Enabled false) has no cluster series",
    );
    assert.equal(
      [...m.keys()].some((k) => k.startsWith("pdu_") && !k.startsWith("pdu_bridge") && k.includes('"dead"')),
      false,
      "an instance that never polled exports no readings",
    );
  });

  it("passes promtool check metrics", { skip: noPromtool }, async () => {
    const r = await h.health.get("/metrics");
    const check = await promtool(["check", "metrics"], r.text);
    assert.equal(check.code, 0, check.output);
  });

  it("serves OpenMetrics when the scraper asks for it", async () => {
    const r = await h.health.get("/metrics", { accept: OPENMETRICS });
    assert.equal(r.status, 200);
    assert.equal(r.headers["content-type"], "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assert.ok(r.text.endsWith("# EOF\n"));
    assert.equal(r.text.indexOf("# EOF"), r.text.length - 6, "one # EOF, at the end");
    assert.doesNotMatch(r.text, /\n\n/, "no blank lines in OpenMetrics");
    assert.match(r.text, /^# TYPE pdu_outlet_energy_joules counter$/m);
    assert.match(r.text, /^# TYPE pdu_outlet info$/m);
    assert.equal(
      samples(r.text).get(`pdu_outlet_power_watts{instance="cluster",device="${dev}",outlet="0"}`),
      1234.5,
    );
    const text = await h.health.get("/metrics", { accept: "text/plain;version=0.0.4" });
    assert.match(text.headers["content-type"] ?? "", /^text\/plain; version=0\.0\.4/);
    assert.match(
      text.text,
      /^pdu_bridge_poll_failures_total\{instance="dead"\} \d+$/m,
      "counters keep _total",
    );
  });

  it("drops the readings of an instance whose last poll failed", async () => {
    const before = samples((await h.health.get("/metrics")).text);
    assert.equal(before.get(`pdu_bridge_up{instance="flaky"}`), 1);
    assert.ok([...before.keys()].some((k) => k.startsWith('pdu_outlet_power_watts{instance="flaky"')));
    await h.sims.flaky.setFault("http500");
    await waitFor(() => (h.app.store.get("flaky")?.consecutiveFailures ?? 0) > 0, "a failed poll of flaky");
    const m = samples((await h.health.get("/metrics")).text);
    assert.equal(m.get(`pdu_bridge_up{instance="flaky"}`), 0);
    assert.equal(
      [...m.keys()].some((k) => !k.startsWith("pdu_bridge") && k.includes('instance="flaky"')),
      false,
      "no readings of a failing instance",
    );
    assert.ok((m.get(`pdu_bridge_last_successful_poll_timestamp_seconds{instance="flaky"}`) ?? 0) > 1e9);
    await h.sims.flaky.setFault(null);
  });

  it("counts HTTP requests by listener, route and status class, and control commands", async () => {
    await h.api.get("/api/v1/health"); // answered by the fast path
    await h.api.get("/api/v1/instances");
    await h.api.get("/api/v1/instances/nope");
    await h.health.get("/healthz");
    await h.health.get("/no/such/path");
    const control = `/api/v1/instances/cluster/outlets/${dev}/2/control`;
    const done = await h.api.post(control, { action: "on" }, { "x-api-key": KEY });
    assert.equal(done.status, 200, done.text);
    const refused = await h.api.post(control, { action: "explode" }, { "x-api-key": KEY });
    assert.equal(refused.status, 400);
    const commands = (action: string, outcome: string) =>
      m.get(`pdu_bridge_control_commands_total{source="rest",action="${action}",outcome="${outcome}"}`) ?? 0;
    // Counted once the response is finished, which may be just after the client has it.
    let m = new Map<string, number>();
    const http = (listener: string, route: string, code: string) =>
      m.get(`pdu_bridge_http_requests_total{listener="${listener}",route="${route}",code="${code}"}`) ?? 0;
    await waitFor(async () => {
      m = samples((await h.health.get("/metrics")).text);
      return (
        http("api", "/api/v1/health", "2xx") >= 1 &&
        http("api", "/api/v1/instances", "2xx") >= 1 &&
        http("api", "unmatched", "4xx") >= 1 &&
        http("health", "/healthz", "2xx") >= 1 &&
        http("health", "unmatched", "4xx") >= 1 &&
        http("api", "/api/v1/instances/:id/outlets/:deviceId/:index/control", "4xx") >= 1 &&
        commands("none", "refused") >= 1
      );
    }, "the requests to be counted by route pattern and status class").catch(() => {
      assert.fail([...m.keys()].filter((k) => /http_req|control_comm/.test(k)).join("\n"));
    });
    assert.ok(commands("on", "done") >= 1);
    // The MQTT surface counts under source="mqtt" (the harness's probe command is refused: no such device).
    await h.commandsReady("cluster");
    await waitFor(async () => {
      const text = (await h.health.get("/metrics")).text;
      return /^pdu_bridge_control_commands_total\{source="mqtt",action="[a-zA-Z]+",outcome="refused"\} [1-9]/m.test(
        text,
      );
    }, "an MQTT command to be counted");
    assert.ok(commands("none", "refused") >= 1, "unknown actions are not label values");
    assert.equal(
      [...m.keys()].some((k) => k.includes("explode")),
      false,
    );
  });
});

describe("Metrics configuration", () => {
  it("Metrics.Enabled false serves no /metrics; Metrics.Path moves it", async () => {
    const off = await startAppHarness<"sim">({
      sims: { sim: { outlets: 1 } },
      yaml: (s) => appYaml({ pdus: [pduYaml("a", s.sim)], extra: "Metrics: { Enabled: false }" }),
    });
    try {
      const none = await off.health.get("/metrics");
      assert.equal(none.status, 404);
      assert.match(none.text, /serves GET \/healthz, \/readyz and \/health\/integrations"/);
    } finally {
      await off.close();
    }
    const moved = await startAppHarness<"sim">({
      sims: { sim: { outlets: 1 } },
      yaml: (s) => appYaml({ pdus: [pduYaml("a", s.sim)], extra: "Metrics: { Path: /prom/metrics }" }),
    });
    try {
      const r = await moved.health.get("/prom/metrics");
      assert.equal(r.status, 200);
      assert.match(r.text, /^pdu_bridge_up\{instance="a"\} [01]$/m);
      const gone = await moved.health.get("/metrics");
      assert.equal(gone.status, 404);
      assert.match(gone.text, /serves GET \/healthz, \/readyz, \/health\/integrations and \/prom\/metrics/);
    } finally {
      await moved.close();
    }
  });

  it("refuses a Metrics.Path that is a health endpoint or not a path", async () => {
    const base =
      "Mqtt: { Connection: { Host: 127.0.0.1 } }\nPdus: { a: { Connection: { Host: 127.0.0.1 } } }\n";
    await assert.rejects(
      parseConfigText(`${base}Metrics: { Path: /healthz }\n`, "t.yaml", {}),
      /Metrics\.Path/,
    );
    await assert.rejects(
      parseConfigText(`${base}Metrics: { Path: "metrics" }\n`, "t.yaml", {}),
      /Metrics\.Path/,
    );
    await assert.rejects(
      parseConfigText(`${base}Metrics: { Path: "/a b" }\n`, "t.yaml", {}),
      /Metrics\.Path/,
    );
  });
});
