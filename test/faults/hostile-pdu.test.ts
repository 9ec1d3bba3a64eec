/**
 * A hostile PDU beside a healthy one, in the real service (the CLI as a child process, with the
 * REST API in its worker thread), against a spawned mosquitto and against the embedded broker. The
 * hostile PDU is the project's simulator in its hostile answer modes (docs/simulator.md):
 *
 * - a device id of 6,000,000 characters with 60 outlets (a 6 MB id in a body under the 16 MiB cap),
 *   then `GET /api/v1/readings?instance=…`: unbounded, the readings (which repeat the id in every
 *   reading) cannot be serialised (`RangeError: Invalid string length`, uncaught on the main
 *   thread);
 * - a device and an outlet label of 6,000,000 characters each: unbounded, memory swings by
 *   gigabytes;
 *
 * Now the answer is bounded where it enters the service (docs/reliability.md, "Bounds on what a PDU
 * sends"): the over-long id leaves its device out (here the only one, so the answer is refused and
 * the last good snapshot kept), the over-long labels are read as blank. In every case: the process
 * keeps running with bounded memory, the REST readings answer, the healthy PDU keeps being polled
 * and published without the bridge reconnecting, and `/readyz` stays READY.
 */
import assert from "node:assert/strict";
import { after, before, describe, it, type TestContext } from "node:test";
import { until, type Reading } from "../../testkit/faults-harness.js";
import { HostileSimRig, type RssGrowth } from "../../testkit/hostile-sim-rig.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { MB } from "../../testkit/rss.js";

failOnUnhandled();

const P = "hostile-pdu";
const HUGE = 6_000_000;
/** What the bridge may grow by while the hostile answers come (unbounded answers cost gigabytes). */
const RSS_GROWTH_LIMIT = 400 * MB;

for (const brokerKind of ["mosquitto", "embedded"] as const) {
  describe(`a hostile PDU beside a healthy one (${brokerKind} broker)`, () => {
    let rig: HostileSimRig;

    before(async () => {
      rig = await HostileSimRig.start({
        brokerKind,
        parentTopic: P,
        good: { outlets: 4, seed: 41 },
        bad: { outlets: 4, seed: 42 },
        name: `bridge-${brokerKind}`,
      });
    });

    after(async () => {
      await rig?.close();
    });

    /** The bridge's memory over a hostile spell: reported, and bounded. */
    const bounded = (t: TestContext, rss: RssGrowth) => {
      const growth = `RSS ${Math.round(rss.base / MB)} MB, peak +${Math.round((rss.peak - rss.base) / MB)} MB`;
      t.diagnostic(`${brokerKind}: ${growth} (${rss.samples} samples)`);
      assert.ok(rss.peak - rss.base < RSS_GROWTH_LIMIT, growth);
    };

    it("a 6,000,000-character device id with 60 outlets: refused, the readings still answer", async (t) => {
      const { bad, bridge } = rig;
      const rss = await rig.hostileSpell(async () => {
        await bad.setFault(["outlets:60", `huge-id:${HUGE}`]);
        // The readings once the first hostile answer is refused: the last good snapshot (a poll
        // may complete between a read and the fault taking effect, so they are read after).
        await until(
          async () =>
            /device id of 6000000 characters/.test((await bridge.instanceHealth("bad")).lastError ?? ""),
          "the first hostile answer refused",
          30_000,
        );
        const lastGood = await bridge.readings("bad");
        assert.ok(lastGood.length > 0);
        await rig.polls(3);
        for (const path of ["/api/v1/readings?instance=bad", "/api/v1/readings"]) {
          const answer = await bridge.api(path, { timeoutMs: 30_000 });
          assert.equal(answer.status, 200, `${path}: ${answer.text.slice(0, 300)}`);
          assert.ok(answer.text.length < 100_000, `${path} is ${answer.text.length} characters`);
        }
        // The answer was refused: the last good snapshot stays, its readings unchanged.
        const health = await bridge.instanceHealth("bad");
        assert.match(
          health.lastError ?? "",
          /device id of 6000000 characters is longer than \d+; the device is left out/,
        );
        assert.ok(health.lastError!.length < 1000, "the error does not carry the id");
        const kept = await bridge.readings("bad");
        assert.deepEqual(
          kept.map((r: Reading) => [r.deviceId, r.outletIndex, r.type, r.value]),
          lastGood.map((r: Reading) => [r.deviceId, r.outletIndex, r.type, r.value]),
        );
        await rig.healthyAlongside();
      });
      bounded(t, rss);
      await rig.badAnsweringWell();
    });

    it("6,000,000-character labels: read as blank with a warning, memory bounded", async (t) => {
      const { bad, bridge } = rig;
      const rss = await rig.hostileSpell(async () => {
        await bad.setFault(`huge-label:${HUGE}`);
        await rig.polls(4);
        for (let i = 0; i < 3; i++) {
          const answer = await bridge.api("/api/v1/readings?instance=bad", { timeoutMs: 30_000 });
          assert.equal(answer.status, 200);
          assert.ok(answer.text.length < 100_000, `readings are ${answer.text.length} characters`);
          const readings = JSON.parse(answer.text) as { device: string; source: string }[];
          assert.ok(readings.length > 0);
          assert.ok(readings.every((r) => r.device.length < 100 && r.source.length < 100));
        }
        const integrations = JSON.parse((await bridge.health("/health/integrations")).text) as {
          integrations: Record<string, { status: string; warnings?: { path: string; problem: string }[] }>;
        };
        const pdu = integrations.integrations["pdu:bad"];
        assert.equal(pdu?.status, "degraded");
        const problems = (pdu?.warnings ?? []).map((w) => w.problem);
        assert.ok(
          problems.some((p) => /label of 6000000 characters is longer than \d+; read as blank/.test(p)),
          JSON.stringify(problems),
        );
        await rig.healthyAlongside();
        // Logged once per place, not on every poll.
        await rig.polls(2);
        const lines = bridge.logLines().filter((l) => /read as blank/.test(String(l.problem)));
        assert.equal(lines.length, 2, "one line for the device's label, one for the outlet's");
      });
      bounded(t, rss);
    });
  });
}
