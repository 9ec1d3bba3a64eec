/**
 * Lifetime energy counters against the simulator's ground truth (it integrates each outlet's power
 * over time, whatever happens to the counters): the whole service on a Geist simulator, a real
 * mosquitto that outlives the bridge's restarts, `State.Dir` in a temporary directory. Along the
 * way: resetStats through REST and through MQTT, a reset at the PDU, the unit replaced by one with
 * another serial, two restarts of the bridge, and a spike 10^6 kWh above the last reading.
 *
 * Every `energyLifetime` value published (outlets and entities) is checked never to decrease at
 * its place (a replaced unit's outlets continue the old ones'), and at the end each outlet's
 * counter equals the ground truth within the PDU's resolution (1 Wh) per restart of its counter.
 *
 * The simulator's clock is paused around each event and until the bridge has polled the paused
 * values: what a poll interval's energy would blur is then exact (the counter's rounding is all
 * that remains), so the comparison with the truth is strict.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { App } from "../../src/app.js";
import { parseConfigText } from "../../src/config/load.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import { Client } from "../../testkit/http-harness.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { PausableClock } from "../../testkit/pausable-clock.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const KEY = "energy-lifetime-test-key-0123456789";
const OUTLETS = 4;
const ID = "lab";
const LIFETIME = "/measurements/energyLifetime";

describe("lifetime energy counters against the simulator's ground truth", () => {
  const clock = new PausableClock();
  const capture = new LogCapture();
  let sim: Simulator;
  let broker: Mosquitto;
  let recorder: Recorder;
  let ha: Recorder;
  let dir: string;
  let app: App | null = null;
  let api: Client;
  /** A replaced unit's device id → the id of the unit it replaced (the same place). */
  const placeOf = new Map<string, string>();
  /** Restarts of each outlet's counter so far (resets and the replacement), by index. */
  const restarts = new Array<number>(OUTLETS).fill(0);

  const device = (): string => {
    const id = app?.store.get(ID)?.snapshot?.devices[0]?.id;
    assert.ok(id !== undefined, "a polled device");
    return id;
  };

  async function startApp(): Promise<void> {
    const yaml = appYaml({
      pdus: [pduYaml(ID, sim, { actionsEnabled: true, pollInterval: 1 })],
      api: { key: KEY },
      broker: { host: broker.host, port: broker.port },
      extra: `State:\n  Dir: ${JSON.stringify(dir)}`,
    });
    const config = await parseConfigText(yaml, "energy-test.yaml", {});
    app = await App.start(config, { logger: capture.logger });
    const port = app.endpoints.apiPort;
    assert.ok(port !== null);
    api = new Client(port);
  }

  /** Waits until the bridge has applied a poll made after now. */
  async function polled(): Promise<void> {
    const since = Date.now();
    await waitFor(
      () => (app?.store.get(ID)?.lastSuccessUtc ?? 0) > since,
      "a poll of the paused values",
      15_000,
    );
    // The energy part hears a snapshot on the bus as it is stored; the surfaces right after.
  }

  /** Pauses the simulator's clock, lets the bridge read the paused values, runs the event, resumes. */
  async function atRest(event: () => Promise<void> | void): Promise<void> {
    clock.pause();
    try {
      await polled();
      await event();
      await polled();
    } finally {
      clock.resume();
    }
  }

  const lifetime = (index: number): number | null => app?.energy.reader.outletWh(ID, device(), index) ?? null;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "pdu-bridge-energy-"));
    broker = await Mosquitto.start();
    sim = await startSimulator({ outlets: OUTLETS, seed: 47, clock: clock.now });
    recorder = await Recorder.connect(broker, [
      `pdu-bridge/${ID}/+/outlets/+${LIFETIME}`,
      `pdu-bridge/${ID}/+/entity/+${LIFETIME}`,
    ]);
    ha = await Recorder.connect(broker, ["homeassistant/sensor/#"]);
    await startApp();
    await waitFor(
      () => recorder.messages.filter((m) => m.topic.includes("/outlets/")).length >= OUTLETS,
      "the lifetime counters of every outlet published",
      15_000,
    );
  });
  after(async () => {
    await recorder?.close();
    await ha?.close();
    await app?.stop();
    await sim?.close();
    await broker?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("is announced to Home Assistant as total_increasing energy, passing its discovery rules", async () => {
    const configs = () =>
      ha.messages.filter((m) => m.topic.endsWith("_energyLifetime/config") && m.payload !== "");
    await waitFor(() => configs().length >= OUTLETS, "the lifetime sensors' discovery configs", 15_000);
    for (const m of configs()) {
      const config = JSON.parse(m.payload) as Record<string, unknown>;
      assert.deepEqual(haDiscoveryProblems("sensor", config), [], m.topic);
      assert.equal(config.device_class, "energy", m.topic);
      assert.equal(config.state_class, "total_increasing", m.topic);
      assert.equal(config.unit_of_measurement, "kWh", m.topic);
      assert.match(String(config.state_topic), /\/measurements\/energyLifetime$/);
    }
    // The PDU's own counter, which resets, is no total_increasing sensor.
    const own = ha.messages.filter((m) => m.topic.endsWith("_energy/config") && m.payload !== "");
    assert.ok(own.length >= OUTLETS);
    for (const m of own) {
      const config = JSON.parse(m.payload) as Record<string, unknown>;
      assert.deepEqual(haDiscoveryProblems("sensor", config), [], m.topic);
      assert.equal(config.state_class, "total", m.topic);
    }
  });

  it("carries on through resetStats by REST and by MQTT, and a reset at the PDU", async () => {
    const before = [0, 1, 2].map((i) => lifetime(i) ?? -1);
    await atRest(async () => {
      const res = await api.post(
        `/api/v1/instances/${ID}/outlets/${device()}/0/control`,
        { action: "resetStats" },
        { "x-api-key": KEY },
      );
      assert.equal(res.status, 200, res.text);
      assert.equal(sim.outlet(device(), 0).energyKwh, 0, "the PDU's own counter was reset");
      // Sent again until it took effect (the bridge subscribes after it connects); a second reset of
      // a counter at 0 while the clock stands still changes nothing.
      await waitFor(
        async () => {
          if (sim.outlet(device(), 1).energyKwh === 0) return true;
          await recorder.publish(`pdu-bridge/${ID}/${device()}/outlets/1/resetStats`, "1");
          await sleep(500);
          return false;
        },
        "the MQTT resetStats at the PDU",
        15_000,
      );
      sim.setEnergy(device(), 2, 0);
    });
    for (const i of [0, 1, 2]) restarts[i] = (restarts[i] ?? 0) + 1;
    for (const i of [0, 1, 2]) assert.ok((lifetime(i) ?? -1) >= before[i]!, `outlet ${i} carried on`);
  });

  it("carries on through two restarts of the bridge with State.Dir", async () => {
    for (let round = 0; round < 2; round++) {
      const held = lifetime(3) ?? -1;
      await app?.stop();
      app = null;
      const file = JSON.parse(await readFile(join(dir, "energy.json"), "utf8")) as { format: string };
      assert.equal(file.format, "pdu-bridge/energy");
      await startApp();
      await polled();
      assert.ok((lifetime(3) ?? -1) >= held, `round ${round}: outlet 3 continued from ${held}`);
    }
  });

  it("continues a replaced unit's counters (another serial at the same place)", async () => {
    const old = device();
    let fresh = "";
    await atRest(() => {
      fresh = sim.replaceDevice(old);
      placeOf.set(fresh, old);
    });
    await waitFor(() => device() === fresh, "the new unit polled");
    for (let i = 0; i < OUTLETS; i++) restarts[i] = (restarts[i] ?? 0) + 1;
    await polled();
  });

  it("does not count a spike 10^6 kWh above the last reading and logs it once", async () => {
    const held = lifetime(3) ?? -1;
    const kwh = sim.outlet(device(), 3).energyKwh;
    sim.setMeasurementRaw(device(), 3, "energy", (kwh + 1e6).toFixed(3));
    await polled();
    await polled();
    assert.ok((lifetime(3) ?? Infinity) < held + 1000, "the spike was not counted");
    sim.setMeasurementRaw(device(), 3, "energy", null);
    await polled();
    const lines = capture.lines.filter((l) =>
      String(l.msg).includes("larger than the outlet or entity could draw"),
    );
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]?.where, "outlet 4");
  });

  it("never decreased at any place, and ends at the ground truth within 1 Wh per restart of a counter", async () => {
    await atRest(() => undefined);
    const places = new Map<string, number>();
    for (const m of recorder.messages) {
      const [, , dev = "", kind = "", key = ""] = m.topic.split("/");
      const place = `${placeOf.get(dev) ?? dev}/${kind}/${key}`;
      // A topic cleared (an empty retained message) is no value.
      if (m.payload === "") continue;
      const value = Number(m.payload);
      assert.ok(Number.isFinite(value) && value >= 0, `${m.topic}: ${m.payload}`);
      const last = places.get(place) ?? 0;
      assert.ok(value >= last, `${m.topic} went from ${last} to ${value}`);
      places.set(place, value);
    }
    assert.ok(places.size >= OUTLETS, "every outlet's values were seen");
    clock.pause();
    try {
      await polled();
      for (let i = 0; i < OUTLETS; i++) {
        const truth = sim.energyTruthWh(device(), i);
        const counted = lifetime(i);
        assert.ok(counted !== null);
        const tolerance = 1 + restarts[i]!;
        assert.ok(
          Math.abs(counted - truth) <= tolerance,
          `outlet ${i}: lifetime ${counted} Wh, truth ${truth.toFixed(3)} Wh (±${tolerance})`,
        );
        const published = recorder.messages
          .filter((m) => m.topic.endsWith(`/${device()}/outlets/${i}${LIFETIME}`))
          .at(-1);
        await waitFor(
          () =>
            recorder.messages.filter((m) => m.topic.endsWith(`/${device()}/outlets/${i}${LIFETIME}`)).at(-1)
              ?.payload === (Math.floor(counted) / 1000).toFixed(3),
          `outlet ${i}'s last published value (${published?.payload})`,
        );
      }
    } finally {
      clock.resume();
    }
  });
});
