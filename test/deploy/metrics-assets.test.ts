/**
 * The shipped Grafana dashboard and Prometheus alert rules: promtool accepts the rules and their unit
 * tests, and every metric any of their queries names is in the bridge's exposition (a OneView cluster
 * behind the real App, so group rollups are there too).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { dashboardQueries, metricNames, ruleQueries, RULES_DIR } from "../../testkit/metrics-assets.js";
import { prometheusUnavailable, promtool } from "../../testkit/prometheus.js";

const noPromtool = await prometheusUnavailable();

describe("Grafana dashboard and alert rules", () => {
  let h: AppHarness<"cluster">;
  let exposed: Set<string>;

  before(async () => {
    h = await startAppHarness<"cluster">({
      sims: { cluster: { oneview: { members: 1 }, outlets: 2 } },
      yaml: (s) => appYaml({ pdus: [pduYaml("cluster", s.cluster, { pollInterval: 1 })] }),
    });
    await h.waitForPoll("cluster");
    const text = (await h.health.get("/metrics")).text;
    // Sample names, and the families declared (a labelled counter has no sample before its first event).
    exposed = new Set<string>();
    for (const line of text.split("\n")) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type !== null) {
        const suffixes = type[2] === "histogram" ? ["_bucket", "_sum", "_count"] : [""];
        for (const suffix of suffixes) exposed.add(`${type[1]}${suffix}`);
      } else if (line !== "" && !line.startsWith("#"))
        exposed.add(/^[A-Za-z_:][A-Za-z0-9_:]*/.exec(line)![0]);
    }
  });
  after(() => h?.close());

  it("every metric the dashboard and the rules query is exported", async () => {
    const queries = [...(await dashboardQueries()), ...(await ruleQueries())];
    assert.ok(queries.length >= 20, `found ${queries.length} queries`);
    const missing: string[] = [];
    for (const { where, expr } of queries) {
      const names = metricNames(expr);
      assert.ok(names.length > 0, `${where} names no metric: ${expr}`);
      for (const name of names) if (!exposed.has(name)) missing.push(`${where}: ${name}`);
    }
    assert.deepEqual(missing, []);
  });

  it("the dashboard covers fleet power, per-outlet power and energy, poll health, MQTT and control", async () => {
    const names = new Set((await dashboardQueries()).flatMap((q) => metricNames(q.expr)));
    for (const name of [
      "pdu_outlet_power_watts",
      "pdu_outlet_energy_joules_total",
      "pdu_bridge_up",
      "pdu_bridge_poll_duration_seconds_bucket",
      "pdu_bridge_mqtt_connected",
      "pdu_bridge_mqtt_messages_published_total",
      "pdu_bridge_control_commands_total",
    ])
      assert.ok(names.has(name), name);
  });

  it("promtool check rules passes", { skip: noPromtool }, async () => {
    const result = await promtool(["check", "rules", `${RULES_DIR}/alerts.yaml`]);
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /SUCCESS: 10 rules found/);
  });

  it(
    "promtool test rules passes (PDU not polled, poll failing, MQTT disconnected, warning and critical load, a tripped breaker, a trip suspected, an asset's redundancy, a feed's loss)",
    { skip: noPromtool },
    async () => {
      const result = await promtool(["test", "rules", `${RULES_DIR}/alerts.test.yaml`]);
      assert.equal(result.code, 0, result.output);
      const alerts = (await ruleQueries()).map((q) => q.where);
      assert.deepEqual(alerts.sort(), [
        "alert PduAssetRedundancyLost",
        "alert PduBreakerTripSuspected",
        "alert PduBreakerTripped",
        "alert PduBridgeMqttDisconnected",
        "alert PduFeedLossHeadroomLow",
        "alert PduFeedLossOverload",
        "alert PduLoadCritical",
        "alert PduLoadWarning",
        "alert PduNotPolled",
        "alert PduPollFailing",
      ]);
    },
  );
});
