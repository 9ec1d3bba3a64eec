/**
 * `/metrics` exports only what a topic may carry, and a bounded number of series per PDU
 * (docs/metrics.md, "What is left out"). Through the real service (App) and the simulator's
 * hostile modes:
 *
 * - a device id of 200 characters (within the bounds on what a PDU sends, but no safe name: over
 *   128 bytes) never becomes a `device` label value: it is left out, like its MQTT topics, and
 *   counted;
 * - a PDU of 16 devices × 250 outlets (35,000-odd series) exports at most
 *   MAX_SERIES_PER_INSTANCE, whole devices in order, the rest counted and warned about once.
 *
 * promtool checks the exposition when it is installed.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MAX_SERIES_PER_INSTANCE } from "../../src/metrics/readings.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { prometheusUnavailable, promtool } from "../../testkit/prometheus.js";

const noPromtool = await prometheusUnavailable();

/** Sample lines of the exposition (no comments). */
const sampleLines = (text: string) => text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));

describe("/metrics: safe names and a series cap per PDU", () => {
  let h: AppHarness<"good" | "unsafe" | "huge">;

  before(async () => {
    h = await startAppHarness<"good" | "unsafe" | "huge">({
      sims: {
        good: { outlets: 4, seed: 51 },
        unsafe: { devices: 2, outlets: 2, seed: 52 },
        huge: { devices: 16, outlets: 8, seed: 53 },
      },
      beforeStart: async (s) => {
        await s.unsafe.setFault("huge-id:200");
        await s.huge.setFault("outlets:250");
      },
      yaml: (s) =>
        appYaml({
          pdus: [
            pduYaml("good", s.good, { pollInterval: 60 }),
            pduYaml("unsafe", s.unsafe, { pollInterval: 60 }),
            pduYaml("huge", s.huge, { pollInterval: 60 }),
          ],
          extra: "HomeAssistant: { DiscoveryEnabled: false }",
        }),
      subscribeAll: false,
      waitForFirstPolls: true,
    });
  });

  after(async () => {
    await h?.close();
  });

  it("leaves out a device whose id is not a safe name, and counts what it left out", async () => {
    const text = (await h.health.get("/metrics")).text;
    const lines = sampleLines(text);
    const [unsafeId, safeId] = h.app.store.get("unsafe")!.snapshot!.devices.map((d) => d.id);
    assert.equal(unsafeId!.length, 200, "the PDU answered a 200-character id");
    assert.ok(!text.includes(unsafeId!), "the unsafe id is no label value");
    assert.ok(
      lines.some((l) => l.startsWith(`pdu_outlet_power_watts{instance="unsafe",device="${safeId}"`)),
      "the other device of the PDU is exported",
    );
    const leftOut = lines.find((l) =>
      l.startsWith('pdu_bridge_metrics_series_left_out{instance="unsafe",reason="unsafe-name"}'),
    );
    assert.ok(leftOut !== undefined && Number(leftOut.split(" ")[1]) > 0, String(leftOut));
  });

  it(`exports at most ${MAX_SERIES_PER_INSTANCE} series of one PDU, counts the rest and warns once`, async () => {
    const first = (await h.health.get("/metrics")).text;
    const second = (await h.health.get("/metrics")).text;
    const lines = sampleLines(second);
    const ofHuge = lines.filter((l) => /^pdu_(outlet|entity|device|group)_\w+\{instance="huge"/.test(l));
    assert.ok(ofHuge.length <= MAX_SERIES_PER_INSTANCE, `${ofHuge.length} series of one PDU`);
    assert.ok(ofHuge.length > MAX_SERIES_PER_INSTANCE / 2, "whole devices up to the cap are exported");
    const leftOut = lines.find((l) =>
      l.startsWith('pdu_bridge_metrics_series_left_out{instance="huge",reason="series-cap"}'),
    );
    assert.ok(leftOut !== undefined, "the left-out series are counted");
    const counted = Number(leftOut.split(" ")[1]);
    assert.ok(counted > 0);
    // Whole devices: a device is exported with all its series or not at all.
    const devices = new Set(ofHuge.map((l) => /device="([^"]+)"/.exec(l)?.[1]));
    const snapshotDevices = h.app.store.get("huge")!.snapshot!.devices;
    assert.ok(devices.size < snapshotDevices.length);
    for (const id of devices) {
      const outlets = new Set(
        ofHuge
          .filter((l) => l.startsWith("pdu_outlet_info{") && l.includes(`device="${id}"`))
          .map((l) => /outlet="(\d+)"/.exec(l)?.[1]),
      );
      assert.equal(outlets.size, 250, `every outlet of ${id}`);
    }
    const warnings = h
      .logs()
      .filter((l) => l.level === "warn" && String(l.msg).startsWith("/metrics leaves out series"));
    assert.equal(warnings.length, 2, "one warning per PDU and reason, not one per scrape");
    assert.equal(first.length > 0, true);
    // The healthy PDU is exported whole.
    assert.ok(lines.some((l) => l.startsWith('pdu_outlet_power_watts{instance="good"')));
    assert.ok(!lines.some((l) => l.startsWith('pdu_bridge_metrics_series_left_out{instance="good"')));
  });

  it("is a valid exposition (promtool)", { skip: noPromtool }, async () => {
    const text = (await h.health.get("/metrics")).text;
    const check = await promtool(["check", "metrics"], text);
    assert.equal(check.code, 0, check.output);
  });
});
