/** The reading families built from the snapshot model (src/metrics/readings.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { escapeLabel, READING_METRICS, renderReadings } from "../../src/metrics/readings.js";
import type { Measurement, Snapshot } from "../../src/pdu/model.js";
import { prometheusUnavailable, promtool } from "../../testkit/prometheus.js";
import { snapshotWith } from "../../testkit/snapshot-builders.js";

const noPromtool = await prometheusUnavailable();

const m = (type: string, value: number | null, units: string): Measurement => ({
  type,
  value,
  units,
  alarm: null,
});

/** A snapshot with a hostile outlet label and measurements the exporter must leave out. */
function hostile(): Snapshot {
  const base = snapshotWith('rack "a"', 1_700_000_000_000, ["on", "off", "unknown"]);
  const device = base.devices[0]!;
  const outlets = device.outlets.map((o, i) =>
    i === 0
      ? {
          ...o,
          label: 'db\\1 "primary"\nsecond line',
          measurements: [
            m("realPower", 120.5, "W"),
            m("energy", 2, "kWh"),
            m("powerFactor", 87, "%"),
            m("current", 1500, "mA"), // a unit the exporter does not know: left out, never mis-scaled
            m("RealPower", 1, "W"), // not the contract's type (case matters): left out
            m("voltage", null, "V"), // non-numeric: left out
            m("frequency", 50, "Hz"), // not in the contract: left out
          ],
        }
      : o,
  );
  return {
    ...base,
    mode: "oneview",
    devices: [{ ...device, outlets }],
    groups: [
      {
        key: "total",
        name: "total",
        label: "",
        displayName: "total",
        state: "normal",
        order: 0,
        members: [],
        measurements: [
          { key: "realPower", type: "realPower", units: "W", sum: 120.5, avg: 40, min: 0, max: 120.5 },
          {
            key: "pduTotalRealPower",
            type: "realPower",
            units: "W",
            sum: 130,
            avg: null,
            min: null,
            max: null,
          },
        ],
      },
    ],
  };
}

describe("renderReadings", () => {
  const text = renderReadings([hostile()], "text");
  const lines = text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
  const dev = 'instance="rack \\"a\\"",device="DEV0"';

  it("names, scales and labels the readings as the contract lists", () => {
    assert.ok(lines.includes(`pdu_outlet_power_watts{${dev},outlet="0"} 120.5`), text);
    assert.ok(lines.includes(`pdu_outlet_energy_joules_total{${dev},outlet="0"} 7200000`));
    assert.ok(lines.includes(`pdu_outlet_power_factor_ratio{${dev},outlet="0"} 0.87`));
    assert.ok(lines.includes(`pdu_outlet_state{${dev},outlet="0"} 1`));
    assert.ok(lines.includes(`pdu_outlet_state{${dev},outlet="1"} 0`));
    assert.ok(
      lines.includes(`pdu_group_power_watts{instance="rack \\"a\\"",group="total",stat="max"} 120.5`),
    );
    assert.ok(
      lines.includes(`pdu_group_pdu_total_power_watts{instance="rack \\"a\\"",group="total",stat="sum"} 130`),
    );
    assert.equal(
      lines.filter((l) => l.startsWith("pdu_group_pdu_total_power_watts")).length,
      1,
      "null stats left out",
    );
  });

  it("leaves out unknown states, unknown units, other types and non-numeric values", () => {
    assert.ok(!lines.some((l) => l.startsWith("pdu_outlet_state") && l.includes('outlet="2"')));
    assert.ok(!lines.some((l) => l.startsWith("pdu_outlet_current_amperes")), "mA is not guessed");
    assert.ok(!lines.some((l) => l.startsWith("pdu_outlet_voltage_volts")));
    assert.equal(
      lines.filter((l) => l.startsWith("pdu_outlet_power_watts")).length,
      1 + 2,
      "RealPower ignored",
    );
    assert.ok(!/ (NaN|[+-]?Inf)$/m.test(lines.join("\n")));
    assert.ok(!/frequency/i.test(text));
  });

  it("escapes PDU-supplied label values so a name cannot break the exposition", () => {
    assert.equal(escapeLabel('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
    const info = lines.find((l) => l.startsWith("pdu_outlet_info") && l.includes('outlet="0"'));
    assert.equal(
      info,
      `pdu_outlet_info{${dev},outlet="0",label="db\\\\1 \\"primary\\"\\nsecond line",name="Outlet 1"} 1`,
    );
    assert.equal(
      text.split("\n").filter((l) => l.startsWith("second")).length,
      0,
      "no line break in a sample",
    );
  });

  it("declares every family once, in both formats", () => {
    for (const name of READING_METRICS) assert.equal(text.split(`# TYPE ${name} `).length, 2, name);
    const om = renderReadings([hostile()], "openmetrics");
    assert.match(om, /^# TYPE pdu_outlet_energy_joules counter$/m);
    assert.match(om, /^# TYPE pdu_device info$/m);
    assert.match(om, /^pdu_outlet_energy_joules_total\{/m);
  });

  it("passes promtool check metrics", { skip: noPromtool }, async () => {
    const result = await promtool(["check", "metrics"], text);
    assert.equal(result.code, 0, result.output);
  });
});
