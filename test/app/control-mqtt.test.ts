/**
 * MQTT commands through the real composed App: a real mqtt.js client publishes to the command
 * topics on the embedded broker, the simulator's outlets change (or, for refused commands, nothing
 * reaches it), the resulting state is published, and every attempt leaves exactly one audit line
 * (`audit: "control"`, source mqtt) that never contains the API key.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Simulator } from "../../src/simulator/index.js";
import {
  appYaml,
  pduYaml,
  startAppHarness,
  type AppHarness,
  type LogLine,
} from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/mqtt-client.js";

const KEY = "e2e-mqtt-key-c3d8e2";

type Sims = "main" | "readonly" | "cluster";

const posts = (sim: Simulator): number => sim.requests.filter((r) => r.method === "POST").length;

describe("MQTT commands through the composed App", () => {
  let h: AppHarness<Sims>;
  /** Every command published by the tests, in order, with the status its audit line must carry. */
  const attempts: { topic: string; status: number }[] = [];

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: {
        main: { outlets: 4 },
        readonly: { outlets: 2, seed: 2 },
        cluster: { oneview: { members: 2 }, outlets: 4, seed: 3 },
      },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            // Relay protection off: outlets switch in quick succession (test/app/relay-protection.test.ts).
            pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 2, relayProtection: 0 }),
            pduYaml("cl", s.cluster, { actionsEnabled: true, pollInterval: 2, relayProtection: 0 }),
            pduYaml("ro", s.readonly, { actionsEnabled: false, credentials: null, pollInterval: 2 }),
          ],
        }),
    });
    for (const id of ["lab", "cl", "ro"]) await h.waitForPoll(id);
    await h.commandsReady("lab");
  });
  after(() => h?.close());

  /** Publishes one command and returns its audit line (waiting for it). */
  async function command(topic: string, payload: string, status: number): Promise<LogLine> {
    attempts.push({ topic, status });
    const line = await h.publishCommand(topic, payload);
    assert.equal(line.topic, topic);
    assert.equal(line.status, status, JSON.stringify(line));
    assert.equal(line.outcome, status === 200 ? "done" : status >= 500 ? "failed" : "refused");
    return line;
  }

  const outletTopic = (instance: string, deviceId: string, index: number, command: string) =>
    `${h.parent}/${instance}/${deviceId}/outlets/${index}/${command}`;

  it("set ON (any case) turns the outlet on and publishes its state", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    // Outlet 3 starts off on the simulator, and the bridge has published that.
    assert.equal(sim.outlet(dev, 3).state, "off");
    await h.mqtt.waitFor(`${h.parent}/lab/${dev}/outlets/3/state`, (m) => m.payload === "off");
    const sent = Date.now();
    const line = await command(outletTopic("lab", dev, 3, "set"), "ON", 200);
    assert.equal(line.action, "on");
    assert.equal(line.target, `outlet ${dev}/3`);
    assert.equal(sim.outlet(dev, 3).state, "on");
    await h.mqtt.waitFor(`${h.parent}/lab/${dev}/outlets/3/state`, (m) => m.payload === "on" && m.at >= sent);
  });

  it("set off turns it off and publishes off", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    const sent = Date.now();
    await command(outletTopic("lab", dev, 3, "set"), "off", 200);
    assert.equal(sim.outlet(dev, 3).state, "off");
    await h.mqtt.waitFor(
      `${h.parent}/lab/${dev}/outlets/3/state`,
      (m) => m.payload === "off" && m.at >= sent,
    );
  });

  it("set garbage is refused: nothing reaches the PDU, never taken as off", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    sim.setOutletState(dev, 1, "on");
    const before = posts(sim);
    const line = await command(outletTopic("lab", dev, 1, "set"), "garbage", 400);
    assert.match(String(line.detail), /garbage/);
    assert.equal(posts(sim), before, "no request (not even a login) reached the PDU");
    assert.equal(sim.outlet(dev, 1).state, "on");
  });

  it("a command to an instance without ActionsEnabled is refused and nothing reaches its PDU", async () => {
    const sim = h.sims.readonly;
    const dev = sim.deviceIds()[0]!;
    sim.setOutletState(dev, 0, "off");
    const line = await command(outletTopic("ro", dev, 0, "set"), "on", 409);
    assert.match(String(line.detail), /ActionsEnabled/);
    assert.equal(posts(sim), 0, "the read-only PDU never got a POST");
    assert.equal(sim.outlet(dev, 0).state, "off");
  });

  it("reboot power-cycles the outlet", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    sim.setOutletState(dev, 2, "on");
    const writes = sim.writes().length;
    await command(outletTopic("lab", dev, 2, "reboot"), "", 200);
    const sent = sim.writes().slice(writes);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]?.path, `/api/dev/${dev}/outlet/2`);
    assert.deepEqual((sent[0]?.body as { data?: unknown }).data, { action: "reboot", delay: false });
    await waitFor(() => sim.outlet(dev, 2).state === "on", "the outlet back on after the reboot");
  });

  it("resetStats resets the outlet's energy", async () => {
    const sim = h.sims.main;
    const dev = sim.deviceIds()[0]!;
    sim.setEnergy(dev, 0, 17.25);
    await command(outletTopic("lab", dev, 0, "resetStats"), "1", 200);
    assert.ok(sim.outlet(dev, 0).energyKwh < 0.01, String(sim.outlet(dev, 0).energyKwh));
    assert.equal(sim.writes().at(-1)?.cmd, "reset");
  });

  it("group set switches every member outlet and publishes their states", async () => {
    const sim = h.sims.cluster;
    const members = sim.groupMembers("2");
    assert.ok(members.length >= 3);
    for (const m of members) sim.setOutletState(m.deviceId, m.index, "on");
    const sent = Date.now();
    const line = await command(`${h.parent}/cl/groups/2/set`, "Off", 200);
    assert.equal(line.target, "group 2");
    for (const m of members) {
      assert.equal(sim.outlet(m.deviceId, m.index).state, "off");
      await h.mqtt.waitFor(
        `${h.parent}/cl/${m.deviceId}/outlets/${m.index}/state`,
        (msg) => msg.payload === "off" && msg.at >= sent,
      );
    }
  });

  it("every attempt produced exactly one audit line, from mqtt, never with the API key", () => {
    const lines = h.mqttAudits();
    assert.deepEqual(
      lines.map((l) => ({ topic: l.topic, status: l.status })),
      attempts,
    );
    assert.ok(lines.every((l) => l.source === "mqtt"));
    for (const line of h.audits()) assert.ok(!JSON.stringify(line).includes(KEY));
    assert.ok(!h.logText().includes(KEY), "the key is nowhere in the log");
  });
});
