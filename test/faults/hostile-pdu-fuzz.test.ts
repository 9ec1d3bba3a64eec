/**
 * Fuzzing what a PDU answers, up to and past the 16 MiB body cap, against the real service (the CLI,
 * REST API in its worker thread) beside a healthy PDU, with a spawned mosquitto and with the
 * embedded broker. The hostile PDU is the project's simulator: each run draws a combination of its
 * hostile answer modes (docs/simulator.md) with sizes around every bound of docs/reliability.md
 * ("Bounds on what a PDU sends") and far past them: device ids and labels of 1 to 16,000,000
 * characters, 0 to 20,000 outlets per device, new device ids on every answer.
 *
 * After each run: the process runs; what the service keeps of the hostile PDU is within the bounds
 * (every id and text of its readings, its error message) or the answer was refused with a reason;
 * the REST readings answer; the healthy PDU was polled and published meanwhile, the bridge never
 * reconnected to MQTT, and `/readyz` is READY (MQTT connected, the healthy PDU fresh, the REST API
 * answering). Throughout, the bridge's resident memory is sampled: its growth over the whole fuzz is
 * bounded (a bound on growth, not on time).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { PDU_BOUNDS } from "../../src/pdu/bounds.js";
import type { SimulatorFault } from "../../src/simulator/index.js";
import { pollCount, until, type Reading } from "../../testkit/faults-harness.js";
import { HostileSimRig } from "../../testkit/hostile-sim-rig.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { MB } from "../../testkit/rss.js";

failOnUnhandled();

const P = "hostile-fuzz";
const RUNS = { mosquitto: 16, embedded: 8 } as const;
/** What the bridge may grow by over the whole fuzz (unbounded hostile answers cost gigabytes). */
const RSS_GROWTH_LIMIT = 500 * MB;
/** Why a hostile answer may fail a poll: the body cap, a refusal by the bounds. */
const REFUSED = /larger than the limit of \d+ bytes|^answer refused: /;

/** Sizes around a bound, and far past it up to `max`. */
const around = (bound: number, max: number) =>
  fc.oneof(
    fc.constantFrom(1, bound - 1, bound, bound + 1),
    fc.integer({ min: 1, max: bound * 2 }),
    fc.integer({ min: bound * 2, max }),
  );

const answer = fc.record(
  {
    hugeId: fc.option(around(PDU_BOUNDS.idChars, 16_000_000), { nil: undefined }),
    hugeLabel: fc.option(around(PDU_BOUNDS.textChars, 8_000_000), { nil: undefined }),
    outlets: fc.option(
      fc.oneof(
        fc.constantFrom(0, PDU_BOUNDS.outletsPerDevice, PDU_BOUNDS.outletsPerDevice + 1),
        fc.integer({ min: 0, max: 20_000 }),
      ),
      { nil: undefined },
    ),
    newId: fc.boolean(),
  },
  { requiredKeys: ["newId"] },
);

type Answer = typeof answer extends fc.Arbitrary<infer T> ? T : never;

/** The simulator's modes for one drawn answer. */
function faults(a: Answer): SimulatorFault[] {
  const list: SimulatorFault[] = [];
  if (a.hugeId !== undefined) list.push(`huge-id:${a.hugeId}`);
  if (a.hugeLabel !== undefined) list.push(`huge-label:${a.hugeLabel}`);
  if (a.outlets !== undefined) list.push(`outlets:${a.outlets}`);
  if (a.newId) list.push("new-id");
  return list;
}

for (const brokerKind of ["mosquitto", "embedded"] as const) {
  describe(`fuzzing a PDU's answers up to the body cap (${brokerKind} broker)`, () => {
    let rig: HostileSimRig;

    before(async () => {
      rig = await HostileSimRig.start({
        brokerKind,
        parentTopic: P,
        good: { outlets: 4, seed: 91 },
        bad: { devices: 2, outlets: 4, seed: 92 },
        badTimeout: 10,
        name: `fuzz-${brokerKind}`,
      });
    });

    after(async () => {
      await rig?.close();
    });

    it(`${RUNS[brokerKind]} hostile answers: no crash, bounded memory, the healthy PDU unaffected`, async (t) => {
      const { bad, bridge } = rig;
      const outcomes = { kept: 0, refused: 0 };
      const rss = await rig.hostileSpell(async () => {
        await fc.assert(
          fc.asyncProperty(answer, async (a) => {
            const since = Date.now();
            await bad.setFault(faults(a));
            const start = pollCount(bad);
            await until(() => pollCount(bad) >= start + 2, "two answers of the hostile PDU", 60_000);
            // The poll of the second answer is handled once the next one is asked for.
            await until(() => pollCount(bad) >= start + 3, "a third request", 60_000);

            const health = await bridge.instanceHealth("bad");
            if (health.lastError === null) outcomes.kept++;
            else {
              outcomes.refused++;
              assert.match(health.lastError, REFUSED);
              assert.ok(health.lastError.length <= 2100, `an error of ${health.lastError.length} characters`);
            }
            for (const path of ["/api/v1/readings?instance=bad", "/api/v1/readings"]) {
              const r = await bridge.api(path, { timeoutMs: 30_000 });
              assert.equal(r.status, 200, `${path}: ${r.text.slice(0, 200)}`);
              const readings = JSON.parse(r.text) as (Reading & { device: string; source: string })[];
              for (const reading of readings) {
                assert.ok(reading.deviceId.length <= PDU_BOUNDS.idChars, "a device id within the bound");
                assert.ok(reading.device.length <= PDU_BOUNDS.textChars, "a device name within the bound");
                assert.ok(reading.source.length <= PDU_BOUNDS.textChars, "an outlet name within the bound");
              }
            }
            assert.equal(bridge.cli.exit, null, "the bridge runs");
            // The healthy PDU: polled, published, and the service READY over a connection never lost.
            await rig.healthyAlongside(since);
          }),
          { numRuns: RUNS[brokerKind], endOnFailure: true },
        );
      });
      const growth = rss.peak - rss.base;
      t.diagnostic(
        `${brokerKind}: ${outcomes.kept} answers kept (within or brought within the bounds), ` +
          `${outcomes.refused} refused; RSS ${Math.round(rss.base / MB)} MB, peak +${Math.round(growth / MB)} MB`,
      );
      assert.ok(growth < RSS_GROWTH_LIMIT, `RSS grew by ${Math.round(growth / MB)} MB`);
      await rig.badAnsweringWell();
    });
  });
}
