/**
 * Fault: PDUs that misbehave, one instance per fault in one bridge (the real CLI), plus a healthy
 * instance. After a first good poll of each, the simulators are switched to: refusing connections,
 * accepting and never answering, answering after the time-out, HTTP 500, truncated JSON, valid JSON
 * of the wrong shape, a >50 MB body. Each faulty instance must show a specific, readable lastError,
 * keep its last snapshot (aging, readings unchanged and not zeroed) and be `offline` on MQTT; the
 * healthy one must not notice: same poll cadence (±30 %), no error, `online`.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator, type SimulatorFault } from "../../src/simulator/index.js";
import {
  BridgeProcess,
  pollCount,
  until,
  type Reading,
  type SnapshotInfo,
} from "../../testkit/faults-harness.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder, sleep } from "../../testkit/mqtt-client.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

const P = "faults-pdu";
/** Seconds per PDU request; `slow` answers well after it. */
const TIMEOUT_S = 1;
const CADENCE_WINDOW_MS = 8000;

interface FaultCase {
  readonly id: string;
  readonly fault: SimulatorFault;
  /** What lastError must say (beyond naming the PDU's address). */
  readonly error: RegExp;
}

const CASES: readonly FaultCase[] = [
  { id: "refuse", fault: "refuse", error: /connection refused/ },
  { id: "hang", fault: "hang", error: new RegExp(`no answer from .* within ${TIMEOUT_S}s`) },
  {
    id: "slow",
    fault: `slow:${TIMEOUT_S * 1000 + 2000}`,
    error: new RegExp(`no answer from .* within ${TIMEOUT_S}s`),
  },
  { id: "http500", fault: "http500", error: /HTTP 500 from .*\(GET \/api\)/ },
  { id: "truncated", fault: "truncated", error: /\(GET \/api\) is not JSON/ },
  { id: "wrongshape", fault: "wrong-shape", error: /^GET \/api from 127\.0\.0\.1:\d+: \$\.dev\b/ },
  { id: "huge", fault: "huge", error: /larger than the limit of \d+ bytes/ },
];

const HEALTHY = "healthy";

describe("PDU faults, one instance per fault, in one bridge", () => {
  let broker: Mosquitto;
  let bridge: BridgeProcess;
  const sims = new Map<string, Simulator>();
  const recorders: Recorder[] = [];
  const cadence = { before: 0, during: 0 };
  const snapshotsAtFault = new Map<string, SnapshotInfo>();
  const readingsAtFault = new Map<string, Reading[]>();

  before(async () => {
    broker = await Mosquitto.start();
    let seed = 20;
    for (const id of [...CASES.map((c) => c.id), HEALTHY]) {
      sims.set(id, await startSimulator({ outlets: 4, seed: seed++ }));
    }
    bridge = await BridgeProcess.start(
      {
        broker,
        parentTopic: P,
        discovery: false,
        pdus: [...sims].map(([id, sim]) => ({ id, sim, pollInterval: 1, timeout: TIMEOUT_S })),
      },
      "bridge (PDU faults)",
    );
    await bridge.waitPolled([...sims.keys()]);

    // The healthy instance's cadence with every PDU healthy...
    const healthy = sims.get(HEALTHY)!;
    let start = pollCount(healthy);
    await sleep(CADENCE_WINDOW_MS);
    cadence.before = pollCount(healthy) - start;

    // ...then the faults, each after a good poll of its instance.
    await Promise.all(CASES.map((c) => sims.get(c.id)!.setFault(c.fault)));
    await until(
      async () => {
        const report = await bridge.healthReport();
        return CASES.every((c) => {
          const i = report.instances.find((x) => x.id === c.id);
          return i !== undefined && i.lastError !== null;
        });
      },
      "every faulty instance to record an error",
      15_000,
    );
    for (const s of await bridge.snapshots()) snapshotsAtFault.set(s.instanceId, s);
    for (const c of CASES) readingsAtFault.set(c.id, await bridge.readings(c.id));

    start = pollCount(healthy);
    await sleep(CADENCE_WINDOW_MS);
    cadence.during = pollCount(healthy) - start;
  });

  after(async () => {
    for (const r of recorders) await r.close().catch(() => undefined);
    await bridge?.close();
    for (const sim of sims.values()) await sim.close();
    await broker?.close();
  });

  for (const c of CASES) {
    it(`${c.fault}: readable lastError, last snapshot kept and aging, offline on MQTT`, async (t) => {
      const sim = sims.get(c.id)!;
      const health = await bridge.instanceHealth(c.id);
      assert.ok(health.lastError !== null);
      t.diagnostic(`${c.fault}: lastError ${JSON.stringify(health.lastError)}`);
      assert.match(health.lastError, c.error);
      if (c.id !== "wrongshape") {
        assert.ok(health.lastError.includes(`127.0.0.1:${sim.port}`), `names the PDU: ${health.lastError}`);
      }
      assert.ok(health.consecutiveFailures >= 1);
      assert.doesNotMatch(health.lastError, /\n\s+at /, "no stack trace");

      // The last good snapshot is kept: same timestamp, older now, readings unchanged and not zeroed.
      const then = snapshotsAtFault.get(c.id);
      const now = (await bridge.snapshots()).find((s) => s.instanceId === c.id);
      assert.ok(then?.timestampUtc && now?.timestampUtc, "a snapshot is still there");
      assert.equal(now.timestampUtc, then.timestampUtc, "no newer snapshot while faulty");
      assert.ok(
        (now.ageSeconds ?? 0) >= (then.ageSeconds ?? 0) + CADENCE_WINDOW_MS / 1000 - 1,
        `ageSeconds grows: ${then.ageSeconds} then ${now.ageSeconds}`,
      );
      const readings = await bridge.readings(c.id);
      assert.deepEqual(readings, readingsAtFault.get(c.id), "readings unchanged");
      assert.ok(readings.length > 0, "readings still there");
      assert.ok(
        readings.some((r) => r.type === "realPower" && r.value > 0),
        "real power not zeroed",
      );
      assert.ok(readings.every((r) => r.timestampUtc === then.timestampUtc));

      // Offline on MQTT (retained).
      const r = await Recorder.connect(broker, [`${P}/${c.id}/status`]);
      recorders.push(r);
      assert.equal((await r.waitFor(`${P}/${c.id}/status`)).payload, "offline");
    });
  }

  it("leaves the healthy instance alone: same cadence, no error, fresh snapshot, online", async (t) => {
    t.diagnostic(
      `healthy instance: ${cadence.before} polls in ${CADENCE_WINDOW_MS / 1000} s before the faults, ` +
        `${cadence.during} during`,
    );
    assert.ok(cadence.before >= (CADENCE_WINDOW_MS / 1000) * 0.7, `polled ${cadence.before} times`);
    assert.ok(
      Math.abs(cadence.during - cadence.before) <= cadence.before * 0.3,
      `cadence ${cadence.before} before vs ${cadence.during} during the faults`,
    );
    const health = await bridge.instanceHealth(HEALTHY);
    assert.equal(health.lastError, null);
    assert.equal(health.consecutiveFailures, 0);
    const snap = (await bridge.snapshots()).find((s) => s.instanceId === HEALTHY);
    assert.ok(snap?.ageSeconds !== null && snap?.ageSeconds !== undefined && snap.ageSeconds < 5);
    const readings = await bridge.readings(HEALTHY);
    assert.ok(readings.some((r) => r.type === "realPower" && r.value > 0));
    // One healthy PDU keeps the service ready.
    const ready = await bridge.readyz();
    assert.equal(ready.status, 200, ready.text);

    const r = await Recorder.connect(broker, [`${P}/+/status`]);
    recorders.push(r);
    await until(() => r.latest().size === CASES.length + 1, "every instance's status", 5000);
    assert.equal(r.last(`${P}/${HEALTHY}/status`)?.payload, "online");
    for (const c of CASES) assert.equal(r.last(`${P}/${c.id}/status`)?.payload, "offline", c.id);
  });

  it("comes back when the faults clear", async () => {
    await Promise.all(CASES.map((c) => sims.get(c.id)!.setFault(null)));
    await bridge.waitPolled([...sims.keys()], 15_000);
    const r = await Recorder.connect(broker, [`${P}/+/status`]);
    recorders.push(r);
    await until(
      () => [...sims.keys()].every((id) => r.last(`${P}/${id}/status`)?.payload === "online"),
      "every instance online again",
      5000,
    );
  });
});
