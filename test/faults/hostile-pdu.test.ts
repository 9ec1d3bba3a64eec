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
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { BridgeProcess, pollCount, until, type Reading } from "../../testkit/faults-harness.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { freePort } from "../../testkit/repo.js";
import { MB, RssSampler, rssBytes } from "../../testkit/rss.js";

failOnUnhandled();

const P = "hostile-pdu";
const HUGE = 6_000_000;
/** What the bridge may grow by while the hostile answers come (unbounded answers cost gigabytes). */
const RSS_GROWTH_LIMIT = 400 * MB;

for (const brokerKind of ["mosquitto", "embedded"] as const) {
  describe(`a hostile PDU beside a healthy one (${brokerKind} broker)`, () => {
    let mosquitto: Mosquitto | null = null;
    let good: Simulator;
    let bad: Simulator;
    let bridge: BridgeProcess;
    let watcher: Recorder;
    let goodDevice: string;

    before(async () => {
      good = await startSimulator({ outlets: 4, seed: 41 });
      bad = await startSimulator({ outlets: 4, seed: 42 });
      goodDevice = good.deviceIds()[0]!;
      mosquitto = brokerKind === "mosquitto" ? await Mosquitto.start() : null;
      const broker = mosquitto ?? { host: "127.0.0.1", port: await freePort() };
      bridge = await BridgeProcess.start(
        {
          broker,
          embedded: mosquitto === null,
          parentTopic: P,
          pdus: [
            { id: "good", sim: good, pollInterval: 1 },
            { id: "bad", sim: bad, pollInterval: 1 },
          ],
        },
        `bridge-${brokerKind}`,
      );
      await bridge.waitPolled(["good", "bad"]);
      watcher = await Recorder.connect(broker, [`${P}/good/#`]);
      await until(async () => (await bridge.readyz()).status === 200, "READY", 15_000);
    });

    after(async () => {
      await watcher?.close();
      await bridge?.close();
      await mosquitto?.close();
      await good?.close();
      await bad?.close();
    });

    /** Waits until the hostile simulator has answered `n` more polls. */
    const polls = async (n: number) => {
      const start = pollCount(bad);
      await until(() => pollCount(bad) >= start + n, `${n} polls of the hostile PDU`, 30_000);
    };

    /** The healthy PDU is still polled and published, the bridge never reconnected, READY. */
    const healthyAlongside = async () => {
      const since = Date.now();
      const measurement = `${P}/good/${goodDevice}/outlets/0/measurements/realPower`;
      await until(
        () => watcher.on(measurement).some((m) => m.at > since),
        "a new measurement of the healthy PDU",
        15_000,
      );
      const goodHealth = await bridge.instanceHealth("good");
      assert.equal(goodHealth.lastError, null);
      const ready = await bridge.readyz();
      assert.equal(ready.status, 200, ready.text);
      const connects = bridge.logLines().filter((l) => l.msg === "connected to MQTT broker").length;
      assert.equal(connects, 1, "the bridge never reconnected to MQTT");
      assert.equal(bridge.cli.exit, null, "the bridge is running");
    };

    it("a 6,000,000-character device id with 60 outlets: refused, the readings still answer", async (t) => {
      await bad.setFault(["outlets:60", `huge-id:${HUGE}`]);
      const sampler = new RssSampler(bridge.cli.child.pid!);
      const base = rssBytes(bridge.cli.child.pid!)!;
      try {
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
        await polls(3);
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
        await healthyAlongside();
      } finally {
        sampler.stop();
        await bad.setFault(null);
      }
      const growth = `RSS ${Math.round(base / MB)} MB, peak +${Math.round((sampler.peak - base) / MB)} MB`;
      t.diagnostic(`${brokerKind}: ${growth} (${sampler.samples} samples)`);
      assert.ok(sampler.peak - base < RSS_GROWTH_LIMIT, growth);
      await until(
        async () => (await bridge.instanceHealth("bad")).lastError === null,
        "the PDU answering well again",
        15_000,
      );
    });

    it("6,000,000-character labels: read as blank with a warning, memory bounded", async (t) => {
      await bad.setFault(`huge-label:${HUGE}`);
      const sampler = new RssSampler(bridge.cli.child.pid!);
      const base = rssBytes(bridge.cli.child.pid!)!;
      try {
        await polls(4);
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
        await healthyAlongside();
        // Logged once per place, not on every poll.
        await polls(2);
        const lines = bridge.logLines().filter((l) => /read as blank/.test(String(l.problem)));
        assert.equal(lines.length, 2, "one line for the device's label, one for the outlet's");
      } finally {
        sampler.stop();
        await bad.setFault(null);
      }
      const growth = `RSS ${Math.round(base / MB)} MB, peak +${Math.round((sampler.peak - base) / MB)} MB`;
      t.diagnostic(`${brokerKind}: ${growth} (${sampler.samples} samples)`);
      assert.ok(sampler.peak - base < RSS_GROWTH_LIMIT, growth);
    });
  });
}
