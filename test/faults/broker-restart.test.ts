/**
 * Fault: the MQTT broker is killed (SIGKILL) and restarted on the same port, three times in a row,
 * under the real CLI. Each time the bridge must be back within 5 s of the broker's return, with
 * availability, discovery and retained outlet states republished (mosquitto runs without
 * persistence, so a restart loses every retained message); a control command issued through REST
 * while the broker is down must act on the PDU and its state must show on MQTT afterwards; and
 * /readyz must say `NOT READY: MQTT not connected` while the broker is down, READY after.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { BridgeProcess, until } from "../../testkit/faults-harness.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder, sleep, type Received } from "../../testkit/mqtt-client.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

const P = "faults-broker";
const OUTLETS = 4;
/** Contract: back within 5 s of the broker's return. */
const RECONNECT_LIMIT_MS = 5000;
/** How long the broker stays down in each round: below, at and above the reconnect back-off cap. */
const DOWNTIMES_MS = [1500, 4000, 7000] as const;

describe("broker killed (SIGKILL) and restarted three times", () => {
  let broker: Mosquitto;
  let sim: Simulator;
  let bridge: BridgeProcess;
  const recorders: Recorder[] = [];

  const subscribe = async (topics: string[]): Promise<Recorder> => {
    const r = await Recorder.connect(broker, topics);
    recorders.push(r);
    return r;
  };

  /** The retained messages a new subscriber gets, once `complete` holds for them. */
  const retained = async (
    complete: (m: Map<string, Received>) => boolean,
    what: string,
  ): Promise<Map<string, Received>> => {
    const r = await subscribe([`${P}/#`, "homeassistant/#"]);
    // A retained topic the bridge publishes again while this subscriber listens (a lifetime counter
    // moves every poll) arrives without the retain flag, as MQTT delivers live messages: a topic
    // counts when the broker sent it retained and its latest payload is not the empty one.
    const pick = () => {
      const kept = new Set(r.messages.filter((m) => m.retain).map((m) => m.topic));
      return new Map([...r.latest()].filter(([topic, m]) => kept.has(topic) && m.payload !== ""));
    };
    await until(() => complete(pick()), what, 10_000);
    // Retained messages arrive in one burst on subscribe; let the rest of it in.
    await sleep(300);
    return pick();
  };

  before(async () => {
    broker = await Mosquitto.start();
    sim = await startSimulator({ outlets: OUTLETS, seed: 11 });
    bridge = await BridgeProcess.start(
      {
        broker,
        parentTopic: P,
        pdus: [{ id: "default", sim, pollInterval: 1, actionsEnabled: true }],
      },
      "bridge (broker restarts)",
    );
    await until(async () => (await bridge.readyz()).status === 200, "the bridge to be READY", 15_000);
  });

  after(async () => {
    for (const r of recorders) await r.close().catch(() => undefined);
    await bridge?.close();
    await sim?.close();
    await broker?.close();
  });

  it("reconnects within 5 s each time and republishes everything, losing no control outcome", async (t) => {
    const device = sim.deviceIds()[0];
    assert.ok(device !== undefined);
    const stateTopic = (i: number) => `${P}/default/${device}/outlets/${i}/state`;
    const hasAllStates = (m: Map<string, Received>) =>
      [...Array(OUTLETS).keys()].every((i) => m.has(stateTopic(i))) &&
      m.get(`${P}/status`)?.payload === "online" &&
      m.get(`${P}/default/status`)?.payload === "online" &&
      [...m.keys()].some((k) => k.startsWith("homeassistant/switch/"));

    const baseline = await retained(hasAllStates, "the retained topics before any restart");
    const baselineTopics = [...baseline.keys()].sort();
    const discovery = baselineTopics.filter((k) => k.startsWith("homeassistant/"));
    // One device + per outlet: a switch, a reboot and a reset button, sensors; at least the switches.
    assert.ok(discovery.filter((k) => k.startsWith("homeassistant/switch/")).length === OUTLETS);

    for (const [round, downMs] of DOWNTIMES_MS.entries()) {
      const index = round % OUTLETS;
      const was: string = sim.outlet(device, index).state;
      const wanted: "on" | "off" = was === "on" ? "off" : "on";

      const killedAt = Date.now();
      await broker.stop("SIGKILL");

      // Down: not ready, for the right reason.
      const notReady = await until(
        async () => {
          const r = await bridge.readyz();
          return r.status === 503 ? r : null;
        },
        `round ${round + 1}: /readyz to report NOT READY`,
        10_000,
      );
      assert.equal(notReady.text, "NOT READY: MQTT not connected");

      // A command while the broker is down acts on the PDU at once.
      const res = await bridge.control("default", device, index, wanted);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(JSON.parse(res.text), {
        ok: true,
        instanceId: "default",
        deviceId: device,
        index,
        action: wanted,
      });
      assert.equal(sim.outlet(device, index).state, wanted, "the PDU switched while the broker was down");
      const stillDown = await bridge.readyz();
      assert.equal(stillDown.status, 503);
      assert.equal(stillDown.text, "NOT READY: MQTT not connected");

      await sleep(Math.max(0, downMs - (Date.now() - killedAt)));
      const returnedAt = Date.now();
      await broker.restart();

      // Back: `online` (retained) on P/status within 5 s of the broker's return.
      const watcher = await subscribe([`${P}/status`]);
      const online = await watcher.waitFor(`${P}/status`, (m) => m.payload === "online", 15_000);
      const reconnectMs = online.at - returnedAt;
      t.diagnostic(
        `round ${round + 1}: broker down ${(returnedAt - killedAt) / 1000} s, ` +
          `P/status online ${reconnectMs} ms after the restart began`,
      );
      assert.ok(
        reconnectMs <= RECONNECT_LIMIT_MS,
        `round ${round + 1}: online after ${reconnectMs} ms (limit ${RECONNECT_LIMIT_MS} ms)`,
      );

      await until(
        async () => {
          const r = await bridge.readyz();
          return r.status === 200 && r.text === "READY";
        },
        `round ${round + 1}: /readyz READY again`,
        10_000,
      );

      // Everything retained is back: availability, discovery, outlet states and labels, the
      // lifetime counters, and the state commanded while the broker was down. Awaited topic by
      // topic (the counters go at QoS 0 with the resync, after the states a subscriber may see first).
      const back = await retained(
        (m) =>
          hasAllStates(m) &&
          baselineTopics.every((k) => m.has(k)) &&
          m.get(stateTopic(index))?.payload === wanted,
        `round ${round + 1}: the retained topics after the restart`,
      );
      assert.deepEqual([...back.keys()].sort(), baselineTopics, "the same retained topics as before");
      assert.equal(back.get(`${P}/status`)?.payload, "online");
      assert.equal(back.get(`${P}/default/status`)?.payload, "online");
      for (let i = 0; i < OUTLETS; i++) {
        assert.equal(back.get(stateTopic(i))?.payload, sim.outlet(device, i).state, `outlet ${i} state`);
      }
      assert.equal(back.get(stateTopic(index))?.payload, wanted, "the command's outcome is on MQTT");
      for (const k of discovery) {
        assert.equal(back.get(k)?.payload, baseline.get(k)?.payload, `discovery ${k} unchanged`);
      }
      for (const r of recorders.splice(0)) await r.close().catch(() => undefined);
    }
    assert.equal(bridge.child.running, true, "the bridge kept running through every restart");
  });
});
