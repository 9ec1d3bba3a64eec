/**
 * `GET /api/v1/energy` from a real Prometheus scraping the bridge every second: over a period with a
 * resetStats in it, the report per outlet equals the lifetime counters' increase within one scrape
 * interval's energy at each end (increase() extrapolates to the period's edges), in JSON and CSV;
 * per instance it is the outlets' sum; the coverage says when the series existed.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { prometheusUnavailable, Prometheus } from "../../testkit/prometheus.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { freePort, sleep } from "../../testkit/repo.js";
import { waitFor } from "../../testkit/wait.js";

const unavailable = await prometheusUnavailable();
const KEY = "energy-report-test-key-0123456789";
const ID = "lab";
const OUTLETS = 3;

interface Row {
  instance?: string;
  device?: string;
  outlet?: string;
  energyWh: number;
  covered: { from: string; to: string } | null;
  gaps: unknown[];
}

describe("energy reports from a real Prometheus", { skip: unavailable }, () => {
  let prometheus: Prometheus;
  let h: AppHarness<"lab">;

  const device = (): string => h.app.store.get(ID)?.snapshot?.devices[0]?.id ?? "";
  const lifetimes = (): number[] =>
    Array.from({ length: OUTLETS }, (_, i) => h.app.energy.reader.outletWh(ID, device(), i) ?? NaN);

  before(async () => {
    const healthPort = await freePort();
    prometheus = await Prometheus.start(`127.0.0.1:${healthPort}`);
    h = await startAppHarness<"lab">({
      sims: { lab: { outlets: OUTLETS, seed: 11 } },
      yaml: (sims) =>
        appYaml({
          pdus: [pduYaml(ID, sims.lab, { pollInterval: 1, actionsEnabled: true })],
          api: { key: KEY },
          health: { port: healthPort },
          extra: `Energy:\n  ReportSource: "http://127.0.0.1:${prometheus.port}"`,
        }),
      waitForFirstPolls: true,
      captureLogs: false,
    });
    await waitFor(
      async () => (await prometheus.query("pdu_outlet_energy_lifetime_wh_total")).length === OUTLETS,
      "Prometheus scraping the lifetime counters",
      30_000,
    );
  });
  after(async () => {
    await h?.close();
    await prometheus?.close();
  });

  it("reports per outlet and per instance the counters' increase, in JSON and CSV", async () => {
    await sleep(2000);
    const from = Math.ceil(Date.now() / 1000);
    await waitFor(() => Date.now() >= from * 1000, "the period's start");
    const start = lifetimes();
    await sleep(4000);
    const res = await h.api.post(
      `/api/v1/instances/${ID}/outlets/${device()}/0/control`,
      { action: "resetStats" },
      { "x-api-key": KEY },
    );
    assert.equal(res.status, 200, res.text);
    await sleep(8000);
    const to = Math.floor(Date.now() / 1000);
    await waitFor(() => Date.now() >= to * 1000, "the period's end");
    const end = lifetimes();
    // Prometheus has scraped past the end.
    await sleep(2500);
    const iso = (s: number) => new Date(s * 1000).toISOString().replace(".000Z", "Z");
    const query = `from=${iso(from)}&to=${iso(to)}`;

    const json = await h.api.get(`/api/v1/energy?${query}&groupBy=outlet`);
    assert.equal(json.status, 200, json.text);
    const report = JSON.parse(json.text) as {
      rows: Row[];
      totalWh: number;
      covered: unknown;
      from: string;
      to: string;
    };
    assert.equal(report.from, iso(from));
    assert.equal(report.to, iso(to));
    assert.ok(report.covered !== null, "the period is covered");
    assert.equal(report.rows.length, OUTLETS);
    for (let i = 0; i < OUTLETS; i++) {
      const row = report.rows.find((r) => r.outlet === String(i));
      assert.ok(row !== undefined, `outlet ${i}`);
      assert.equal(row.instance, ID);
      const increase = end[i]! - start[i]!;
      // One scrape interval (1 s) of the outlet's draw at each end, and the counter's rounding.
      const perSecond = increase / (to - from);
      const tolerance = 2 * perSecond + 2;
      assert.ok(
        Math.abs(row.energyWh - increase) <= tolerance,
        `outlet ${i}: reported ${row.energyWh} Wh, the counter rose ${increase} Wh (±${tolerance.toFixed(2)})`,
      );
      assert.ok(row.covered !== null && row.gaps.length === 0, JSON.stringify(row));
    }

    const csv = await h.api.get(`/api/v1/energy?${query}&groupBy=outlet&format=csv`);
    assert.equal(csv.status, 200, csv.text);
    assert.match(String(csv.headers["content-type"]), /^text\/csv/);
    const lines = csv.text.trimEnd().split("\r\n");
    assert.equal(
      lines[0],
      "instance,device,outlet,energy_wh,energy_kwh,period_from,period_to,covered_from,covered_to,gaps",
    );
    assert.equal(lines.length, OUTLETS + 1);
    for (const line of lines.slice(1)) {
      const [instance, dev, outlet, wh] = line.split(",");
      const row = report.rows.find((r) => r.outlet === outlet);
      assert.equal(instance, ID);
      assert.equal(dev, device());
      assert.ok(row !== undefined && Math.abs(Number(wh) - row.energyWh) < 0.01, line);
    }

    const byInstance = await h.api.get(`/api/v1/energy?${query}&groupBy=instance`);
    assert.equal(byInstance.status, 200, byInstance.text);
    const instances = JSON.parse(byInstance.text) as { rows: Row[] };
    assert.equal(instances.rows.length, 1);
    assert.ok(Math.abs(instances.rows[0]!.energyWh - report.totalWh) < 0.01);
  });

  it("refuses a period that is not one", async () => {
    const res = await h.api.get("/api/v1/energy?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z");
    assert.equal(res.status, 400, res.text);
    assert.match(String(res.headers["content-type"]), /problem\+json/);
  });
});
