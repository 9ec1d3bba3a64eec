/**
 * The new SNMP families through the whole bridge (poller, control core, REST API, embedded broker,
 * Home Assistant discovery):
 * - a real CyberPower PDU44005's walk (../shared/recordings/snmp/) served in place by snmpsimd,
 *   with `Profile: auto` (ePDU2) and with `cyberpower-epdu`: REST readings, MQTT values, outlets,
 *   labels, states and Home Assistant discovery exactly as the test works them out of the walk
 *   (testkit/snmp-expect.ts, from CPS-MIB's text): no outlet reading on a unit that meters none;
 * - the project's recordings of CyberPower ePDU2, ServerTech Sentry3 and Eaton ePDU served by
 *   snmpsimd, and the project's Eaton simulator: chained units as devices, a -1 "not available"
 *   published nowhere, control over REST and MQTT, resetStats sent or refused.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import {
  expectCyberpowerEpdu,
  expectCyberpowerEpdu2,
  expectEatonEpdu,
  expectSentry3,
} from "../../testkit/snmp-expect.js";
import {
  checkDiscovery,
  checkMqtt,
  checkRestReadings,
  recordingsMissing,
  startRecordingsRig,
  type RecordingCase,
  type RecordingsRig,
} from "../../testkit/snmp-recordings.js";
import { readRecording, RECORDINGS, startSnmpsim, type Snmpsim } from "../../testkit/snmpsim.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "snmp-families-test-key-7d2e01";
const withKey = { "x-api-key": KEY };
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

const REAL_CASES: readonly RecordingCase[] = [
  {
    instance: "pdu44005",
    file: "cyberpower-pdu44005.snmpwalk",
    profile: "auto",
    expect: expectCyberpowerEpdu2,
  },
  {
    instance: "pdu44005-epdu",
    file: "cyberpower-pdu44005.snmpwalk",
    profile: "cyberpower-epdu",
    expect: expectCyberpowerEpdu,
  },
];

describe("CyberPower PDU44005's walk through the bridge", { skip: recordingsMissing }, () => {
  let rig: RecordingsRig;
  before(async () => {
    rig = await startRecordingsRig(REAL_CASES, KEY);
  });
  after(async () => {
    await rig?.close();
  });

  it("Profile: auto reads it as cyberpower-epdu2", () => {
    assert.equal(rig.h.app.store.get("pdu44005")?.snapshot?.devices[0]?.type, "cyberpower-epdu2");
    assert.equal(rig.h.app.store.get("pdu44005")?.snapshot?.devices[0]?.outlets.length, 10);
  });

  for (const c of REAL_CASES) {
    describe(c.instance, () => {
      it("REST readings are exactly the walk's values under CPS-MIB's scaling", async () => {
        await checkRestReadings(rig, c.instance);
      });
      it("MQTT carries the same values, the 10 outlets, their labels and states", async () => {
        await checkMqtt(rig, c.instance);
      });
      it("Home Assistant discovery announces exactly those sensors and a switch per outlet", async () => {
        await checkDiscovery(rig, c.instance);
      });
    });
  }
});

/** The project's own recordings of the new families, held to expectations read from them the same way. */
const OWN_CASES: readonly RecordingCase[] = [
  { instance: "own-epdu2", file: "cyberpower-epdu2.snmprec", profile: "auto", expect: expectCyberpowerEpdu2 },
  { instance: "own-epdu", file: "cyberpower-epdu.snmprec", profile: "auto", expect: expectCyberpowerEpdu },
  { instance: "own-sentry3", file: "servertech-sentry3.snmprec", profile: "auto", expect: expectSentry3 },
  { instance: "own-eaton", file: "eaton-epdu.snmprec", profile: "auto", expect: expectEatonEpdu },
];

describe("the project's recordings of the new families through the bridge, exactly", () => {
  let rig: RecordingsRig;
  before(async () => {
    rig = await startRecordingsRig(OWN_CASES, KEY, RECORDINGS);
  });
  after(async () => {
    await rig?.close();
  });

  it("each recording is detected as its family, chained units as devices", () => {
    const of = (id: string) => rig.h.app.store.get(id)?.snapshot?.devices ?? [];
    assert.deepEqual(
      OWN_CASES.map((c) => [c.instance, of(c.instance).map((d) => d.type)]),
      [
        ["own-epdu2", ["cyberpower-epdu2"]],
        ["own-epdu", ["cyberpower-epdu"]],
        ["own-sentry3", ["servertech-sentry3", "servertech-sentry3"]],
        ["own-eaton", ["eaton-epdu", "eaton-epdu"]],
      ],
    );
  });

  for (const c of OWN_CASES) {
    describe(c.instance, () => {
      it("REST readings are exactly the recording's values under the MIB's scaling, none it marks not there", async () => {
        await checkRestReadings(rig, c.instance);
      });
      it("MQTT carries the same values, the outlets, their labels and states", async () => {
        await checkMqtt(rig, c.instance);
      });
      it("Home Assistant discovery announces exactly those sensors and a switch per outlet", async () => {
        await checkDiscovery(rig, c.instance);
      });
    });
  }
});

describe("the project's recordings and simulator of the new families through the bridge", () => {
  let agent: Snmpsim;
  let simulator: SnmpSimulator;
  let h: AppHarness<never>;
  let readings: Reading[];

  before(async () => {
    agent = await startSnmpsim({ only: RECORDED });
    simulator = await startSnmpSimulator({
      profile: "eaton-epdu",
      port: 0,
      community: "lab-read",
      writeCommunity: "lab-write",
      rebootSeconds: 1,
    });
    const env: Record<string, string> = {
      [`${variable("sim")}_COMMUNITY`]: "lab-read",
      [`${variable("sim")}_WRITE_COMMUNITY`]: "lab-write",
    };
    for (const p of RECORDED) {
      env[`${variable(p)}_COMMUNITY`] = p;
      env[`${variable(p)}_WRITE_COMMUNITY`] = p;
    }
    const pdu = (id: string, port: number) =>
      [
        `  ${id}:`,
        "    Driver: snmp",
        `    Connection: { Host: 127.0.0.1, Port: ${port}, Timeout: 2 }`,
        "    PollInterval: 2",
        "    ActionsEnabled: true",
        "    RelayProtection: 0", // commands in quick succession (test/app/relay-protection.test.ts)
      ].join("\n");
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          ...RECORDED.map((p) => pdu(p, agent.port)),
          pdu("sim", simulator.port),
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
  });

  const of = (instance: string, device: string, at: number | string, type: string) =>
    readings.find(
      (r) =>
        r.instanceId === instance &&
        r.deviceId === device &&
        r.type === type &&
        (typeof at === "number" ? r.outletIndex === at : r.entityKey === at),
    );

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
    for (const r of readings)
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
    // Retained configs arrive as a stream: wait for the last ones the checks below need.
    const pf0 = `${h.parent}/eaton-epdu/G206N12345/outlets/0/measurements/powerFactor`;
    const configs = await waitFor(() => {
      const all = [...ha.latest("homeassistant/")].filter(
        ([t, m]) => t.endsWith("/config") && m.payload !== "",
      );
      const has = (id: string) => all.some(([t]) => t.includes(`_${id}/`));
      const pf = all.some(([, m]) => m.payload.includes(`"state_topic":"${pf0}"`));
      return pf && has("servertech-sentry3") && has("cyberpower-epdu2") && has("sim") ? all : null;
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
    assert.ok(mine("cyberpower-epdu2").every((p) => p.config.device.manufacturer === "CyberPower"));
    assert.ok(mine("eaton-epdu").every((p) => p.config.device.manufacturer === "Eaton"));
    assert.ok(mine("servertech-sentry3").every((p) => p.config.device.manufacturer === "ServerTech"));
    const stateTopics = payloads.map((p) => String(p.config.state_topic));
    assert.ok(!stateTopics.includes(`${h.parent}/eaton-epdu/G206N12345/outlets/1/measurements/powerFactor`));
    assert.ok(stateTopics.includes(pf0));
    assert.ok(mine("eaton-epdu").some((p) => p.component === "switch"));
  });
});
