/**
 * The new SNMP families through the whole bridge (poller, control core, REST API, embedded broker,
 * Home Assistant discovery): a real CyberPower PDU44005's walk served in place by snmpsimd, the
 * project's recordings of CyberPower ePDU2, ServerTech Sentry3 and Eaton ePDU served by snmpsimd,
 * and the project's Eaton simulator. What the unit marks as not there (an outlet reading on a unit
 * that meters no outlet, a -1 "not available") is published nowhere: no REST reading, no MQTT
 * value, no Home Assistant sensor. Expected values come from the recordings themselves.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import { readWalk, serveInPlace, sharedRecordings } from "../../testkit/snmp-recordings.js";
import { readRecording, startSnmpsim, type Snmpsim } from "../../testkit/snmpsim.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "snmp-families-test-key-7d2e01";
const withKey = { "x-api-key": KEY };
const REAL = "cyberpower-pdu44005";
const RECORDED = ["cyberpower-epdu2", "servertech-sentry3", "eaton-epdu"] as const;
const E2 = "1.3.6.1.4.1.3808.1.1.6";
const EP = "1.3.6.1.4.1.534.6.6.7";
const S3 = "1.3.6.1.4.1.1718.3";

interface Reading {
  instanceId: string;
  deviceId: string;
  sourceType: "outlet" | "entity";
  outletIndex: number | null;
  entityKey: string | null;
  type: string;
  units: string;
  value: number;
}

const variable = (id: string) => `SERVICE_PDU_${id.toUpperCase().replaceAll("-", "_")}`;

describe("the new SNMP families through the bridge", () => {
  let real: { port: number; close(): Promise<void> };
  let walk: Map<string, string>;
  let agent: Snmpsim;
  let simulator: SnmpSimulator;
  let h: AppHarness<never>;
  let readings: Reading[];

  before(async () => {
    const dir = sharedRecordings();
    walk = await readWalk(join(dir, `${REAL}.snmpwalk`));
    real = await serveInPlace(dir, REAL);
    agent = await startSnmpsim({ only: RECORDED });
    simulator = await startSnmpSimulator({
      profile: "eaton-epdu",
      port: 0,
      community: "lab-read",
      writeCommunity: "lab-write",
      rebootSeconds: 1,
    });
    const env: Record<string, string> = {
      [`${variable("real")}_COMMUNITY`]: REAL,
      [`${variable("sim")}_COMMUNITY`]: "lab-read",
      [`${variable("sim")}_WRITE_COMMUNITY`]: "lab-write",
    };
    for (const p of RECORDED) {
      env[`${variable(p)}_COMMUNITY`] = p;
      env[`${variable(p)}_WRITE_COMMUNITY`] = p;
    }
    const pdu = (id: string, port: number, actions: boolean) =>
      [
        `  ${id}:`,
        "    Driver: snmp",
        `    Connection: { Host: 127.0.0.1, Port: ${port}, Timeout: 2 }`,
        "    PollInterval: 2",
        `    ActionsEnabled: ${actions}`,
      ].join("\n");
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          pdu("real", real.port, false),
          ...RECORDED.map((p) => pdu(p, agent.port, true)),
          pdu("sim", simulator.port, true),
          `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: ${KEY} }`,
          "HomeAssistant: { SensorExpireAfterSeconds: 4 }",
        ].join("\n"),
      env,
      waitForFirstPolls: true,
    });
    const res = await h.api.get("/api/v1/readings");
    assert.equal(res.status, 200, res.text);
    readings = JSON.parse(res.text) as Reading[];
  });
  after(async () => {
    await h?.close();
    await simulator?.close();
    await agent?.close();
    await real?.close();
  });

  const w = (oid: string): number => {
    const v = walk.get(oid);
    assert.ok(v !== undefined, `the walk has ${oid}`);
    return Number(v);
  };
  const of = (instance: string, device: string, at: number | string, type: string) =>
    readings.find(
      (r) =>
        r.instanceId === instance &&
        r.deviceId === device &&
        r.type === type &&
        (typeof at === "number" ? r.outletIndex === at : r.entityKey === at),
    );

  it("REST: the real PDU44005's bank, phase and unit readings equal the walk's under CPS-MIB's scaling; its outlets have none", () => {
    const serial = String(walk.get(`${E2}.2.2.1.10.1`));
    const mine = readings.filter((r) => r.instanceId === "real");
    assert.ok(mine.length > 0);
    assert.ok(mine.every((r) => r.deviceId === serial));
    assert.deepEqual(
      mine.filter((r) => r.sourceType === "outlet"),
      [],
      "ePDU2DeviceInfoMeteredOutlets is 0: no outlet reading",
    );
    assert.equal(of("real", serial, "bank0", "current")?.value, Math.round(w(`${E2}.5.4.1.5.1`)) / 10);
    assert.equal(of("real", serial, "bank0", "current")?.units, "A");
    assert.equal(of("real", serial, "phase0", "voltage")?.value, w(`${E2}.4.4.1.6.1`) / 10);
    assert.equal(of("real", serial, "phase0", "voltage")?.units, "V");
    assert.equal(of("real", serial, "total0", "realPower")?.value, w(`${E2}.3.4.1.18.1`));
    assert.equal(of("real", serial, "total0", "energy")?.value, w(`${E2}.3.4.1.9.1`) / 10);
  });

  it("REST: every unit behind one address is a device, with readings equal to the recordings'", async () => {
    const eaton = await readRecording("eaton-epdu");
    const sentry = await readRecording("servertech-sentry3");
    const cps = await readRecording("cyberpower-epdu2");
    const num = (rec: Map<string, { value: string }>, oid: string) => Number(rec.get(oid)?.value);
    assert.deepEqual(
      [...new Set(readings.filter((r) => r.instanceId === "eaton-epdu").map((r) => r.deviceId))].sort(),
      ["G206N12345", "G206N12346"],
    );
    assert.deepEqual(
      [
        ...new Set(readings.filter((r) => r.instanceId === "servertech-sentry3").map((r) => r.deviceId)),
      ].sort(),
      ["ADLH0001862", "ADLH0001863"],
    );
    assert.equal(of("eaton-epdu", "G206N12346", 2, "current")?.value, num(eaton, `${EP}.6.4.1.3.1.3`) / 1000);
    assert.equal(
      of("eaton-epdu", "G206N12345", "inlet0", "energy")?.value,
      num(eaton, `${EP}.3.5.1.5.0.1`) / 1000,
    );
    assert.equal(
      of("servertech-sentry3", "ADLH0001863", "infeed0", "current")?.value,
      num(sentry, `${S3}.2.2.1.7.2.1`) / 100,
    );
    assert.equal(
      of("cyberpower-epdu2", "GD3N7E2000123", 2, "current")?.value,
      num(cps, `${E2}.6.2.4.1.6.3`) / 10,
    );
    for (const r of readings.filter((x) => x.instanceId !== "real"))
      assert.ok(["A", "V", "W", "VA", "%", "kWh"].includes(r.units), `${r.instanceId} ${r.type} ${r.units}`);
  });

  it("REST and MQTT: a reading the recording holds as -1 is published nowhere", async () => {
    const eaton = await readRecording("eaton-epdu");
    assert.equal(eaton.get(`${EP}.6.5.1.6.0.2`)?.value, "-1", "outlet A2's power factor is not available");
    assert.equal(of("eaton-epdu", "G206N12345", 1, "powerFactor"), undefined);
    assert.ok(of("eaton-epdu", "G206N12345", 0, "powerFactor") !== undefined);
    const there = `${h.parent}/eaton-epdu/G206N12345/outlets/0/measurements/powerFactor`;
    await waitFor(() => h.mqtt.latest(there).has(there), "outlet 0's power factor on MQTT");
    const never = `${h.parent}/eaton-epdu/G206N12345/outlets/1/measurements/powerFactor`;
    assert.equal(h.mqtt.latest(never).has(never), false);
    const realOutlets = [...h.mqtt.latest(`${h.parent}/real/`).keys()].filter((t) =>
      /\/outlets\/\d+\/measurements\//.test(t),
    );
    assert.deepEqual(realOutlets, [], "no outlet measurement of the real PDU44005 on MQTT");
    const state = `${h.parent}/real/${String(walk.get(`${E2}.2.2.1.10.1`))}/outlets/0/state`;
    await waitFor(() => h.mqtt.latest(state).get(state)?.payload === "on", "the real unit's outlet 1 state");
  });

  it("control: REST on/off reach the Eaton simulator's per-command objects; MQTT reboot reaches Sentry3's outletControlAction", async () => {
    const s = h.app.store.get("sim")?.snapshot;
    const first = s?.devices[0]?.id ?? "";
    for (const action of ["on", "off"] as const) {
      const res = await h.api.post(`/api/v1/instances/sim/outlets/${first}/1/control`, { action }, withKey);
      assert.equal(res.status, 200, res.text);
      await waitFor(() => simulator.unit.outlets[1]?.on === (action === "on"), `outlet 2 ${action}`);
    }
    await h.commandsReady("servertech-sentry3");
    const audit = await h.publishCommand(`${h.parent}/servertech-sentry3/ADLH0001863/outlets/0/reboot`, "");
    assert.equal(audit.status, 200, JSON.stringify(audit));
    await waitFor(
      async () => (await agent.get("servertech-sentry3", `${S3}.2.3.1.11.2.1.1`)) === "3",
      "the reboot SET",
    );
  });

  it("resetStats: Eaton resets one outlet's energy (outletWh 0); Sentry3 and CyberPower refuse with 409 naming the family", async () => {
    const ok = await h.api.post(
      `/api/v1/instances/eaton-epdu/outlets/G206N12345/2/control`,
      { action: "resetStats" },
      withKey,
    );
    assert.equal(ok.status, 200, ok.text);
    assert.equal(await agent.get("eaton-epdu", `${EP}.6.5.1.4.0.3`), "0");
    const sentry = await h.api.post(
      `/api/v1/instances/servertech-sentry3/outlets/ADLH0001862/0/control`,
      { action: "resetStats" },
      withKey,
    );
    assert.equal(sentry.status, 409, sentry.text);
    assert.match(sentry.text, /ServerTech Sentry3/);
    const cps = await h.api.post(
      `/api/v1/instances/cyberpower-epdu2/outlets/GD3N7E2000123/0/control`,
      { action: "resetStats" },
      withKey,
    );
    assert.equal(cps.status, 409, cps.text);
    assert.match(cps.text, /CyberPower ePDU2/);
  });

  it("Home Assistant discovery: valid configs, the vendor as manufacturer, no sensor for a value not there", async () => {
    const ha = await h.subscribe(["homeassistant/#"]);
    const configs = await waitFor(() => {
      const all = [...ha.latest("homeassistant/")].filter(
        ([t, m]) => t.endsWith("/config") && m.payload !== "",
      );
      return all.some(([t]) => t.includes("_eaton-epdu/")) && all.some(([t]) => t.includes("_real/"))
        ? all
        : null;
    }, "discovery configs");
    const payloads = configs.map(([topic, m]) => ({
      topic,
      component: topic.split("/")[1] ?? "",
      config: JSON.parse(m.payload) as Record<string, unknown> & { device: { manufacturer?: string } },
    }));
    for (const p of payloads)
      if (["number", "select", "text"].includes(p.component))
        assert.deepEqual(haDiscoveryProblems(p.component, p.config), [], p.topic);
    const mine = (id: string) => payloads.filter((p) => p.topic.includes(`_${id}/`));
    assert.ok(mine("real").every((p) => p.config.device.manufacturer === "CyberPower"));
    assert.ok(mine("eaton-epdu").every((p) => p.config.device.manufacturer === "Eaton"));
    assert.ok(mine("servertech-sentry3").every((p) => p.config.device.manufacturer === "ServerTech"));
    const stateTopics = payloads.map((p) => String(p.config.state_topic));
    assert.ok(
      stateTopics.includes(
        `${h.parent}/real/${String(walk.get(`${E2}.2.2.1.10.1`))}/entity/bank0/measurements/current`,
      ),
    );
    assert.ok(
      !stateTopics.some((t) => t.startsWith(`${h.parent}/real/`) && /\/outlets\/\d+\/measurements\//.test(t)),
    );
    assert.ok(!stateTopics.includes(`${h.parent}/eaton-epdu/G206N12345/outlets/1/measurements/powerFactor`));
    assert.ok(stateTopics.includes(`${h.parent}/eaton-epdu/G206N12345/outlets/0/measurements/powerFactor`));
    // The real unit's instance has actions off: no switch for its outlets.
    assert.ok(!mine("real").some((p) => p.component === "switch"));
    assert.ok(mine("eaton-epdu").some((p) => p.component === "switch"));
  });
});
