/**
 * A real Prometheus (Debian's package) scrapes the bridge on loopback; its HTTP API must show the
 * simulator's values and the bridge's view of which PDUs are up. Prometheus asks for OpenMetrics
 * first, so this also proves that format parses in the real thing.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { dashboardQueries, ruleQueries, runnable } from "../../testkit/metrics-assets.js";
import { Prometheus, prometheusUnavailable, type Sample } from "../../testkit/prometheus.js";
import { waitFor } from "../../testkit/wait.js";

const skip = await prometheusUnavailable();
if (skip !== undefined) process.stderr.write(`SKIPPING the Prometheus tests: ${skip}\n`);

describe("a real Prometheus scraping the bridge", { skip }, () => {
  let h: AppHarness<"live" | "dead">;
  let prometheus: Prometheus;
  let dev: string;

  before(async () => {
    h = await startAppHarness<"live" | "dead">({
      sims: { live: { outlets: 4 }, dead: { outlets: 2, seed: 2 } },
      beforeStart: async (s) => {
        dev = s.live.deviceIds()[0]!;
        // Pinned: the simulator then answers exactly this for the outlet's real power.
        s.live.setMeasurementRaw(dev, 2, "realPower", "987.5");
        await s.dead.setFault("refuse");
      },
      yaml: (s) =>
        appYaml({
          pdus: [
            pduYaml("live", s.live, { pollInterval: 1 }),
            pduYaml("dead", s.dead, { pollInterval: 1, timeout: 1 }),
          ],
        }),
    });
    await h.waitForPoll("live");
    prometheus = await Prometheus.start(`127.0.0.1:${h.app.endpoints.healthPort}`);
  });
  after(async () => {
    await prometheus?.close();
    await h?.close();
  });

  const queryUntil = (expr: string, ok: (samples: Sample[]) => boolean): Promise<Sample[]> =>
    waitFor(
      async () => {
        const samples = await prometheus.query(expr);
        return ok(samples) ? samples : null;
      },
      `Prometheus to answer ${expr}`,
      30_000,
      250,
    ).catch(async (error: unknown) => {
      const targets = await prometheus.targets().catch(() => []);
      throw new Error(`${String(error)}; targets: ${JSON.stringify(targets)}; log: ${prometheus.output}`);
    });

  it("scrapes the target without errors", async () => {
    await waitFor(
      async () => (await prometheus.targets()).some((t) => t.health === "up"),
      "the scrape target to be up",
      30_000,
      250,
    );
    for (const t of await prometheus.targets()) assert.equal(t.lastError, "", "the last scrape had no error");
  });

  it("stores pdu_outlet_power_watts with the simulator's value", async () => {
    const expr = `pdu_outlet_power_watts{instance="live",device="${dev}",outlet="2"}`;
    const [sample] = await queryUntil(expr, (s) => s.length === 1);
    assert.equal(sample!.value, 987.5, "the value the simulator answers for this outlet");
    // Every outlet of the simulator is there, under the PDU's labels (honor_labels keeps `instance`).
    const all = await queryUntil(`pdu_outlet_power_watts{instance="live"}`, (s) => s.length === 4);
    assert.deepEqual(all.map((s) => s.metric.outlet).sort(), ["0", "1", "2", "3"]);
  });

  it("has pdu_bridge_up 1 for the live PDU and 0 for the dead one, and no readings of the dead one", async () => {
    const up = await queryUntil("pdu_bridge_up", (s) => s.length === 2);
    const byInstance: Record<string, number> = {};
    for (const sample of up) byInstance[sample.metric.instance ?? ""] = sample.value;
    assert.deepEqual(byInstance, { live: 1, dead: 0 });
    assert.deepEqual(await prometheus.query(`pdu_outlet_power_watts{instance="dead"}`), []);
    const failures = await queryUntil(
      `pdu_bridge_poll_failures_total{instance="dead"}`,
      (s) => s.length === 1,
    );
    assert.ok(failures[0]!.value >= 1);
    // Counters and info metrics arrive under their exposition names.
    await queryUntil(`pdu_outlet_energy_joules_total{instance="live"}`, (s) => s.length === 4);
    await queryUntil(
      `pdu_outlet_info{instance="live",outlet="0"}`,
      (s) => s.length === 1 && s[0]!.value === 1,
    );
  });

  it("runs every query of the Grafana dashboard and the alert rules", async () => {
    await queryUntil("pdu_bridge_up", (s) => s.length === 2);
    const failed: string[] = [];
    for (const { where, expr } of [...(await dashboardQueries()), ...(await ruleQueries())]) {
      await prometheus
        .query(runnable(expr))
        .catch((error: unknown) => failed.push(`${where}: ${String(error)}`));
    }
    assert.deepEqual(failed, [], "every query is valid PromQL");
    // Fleet power as the dashboard computes it, once every outlet of the live PDU is stored.
    const fleet = await queryUntil("sum(pdu_outlet_power_watts)", (s) => s.length === 1);
    assert.ok(fleet[0]!.value >= 987.5);
  });
});
