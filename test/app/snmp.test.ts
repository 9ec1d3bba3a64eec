/**
 * SNMP PDUs through the whole bridge: the real App (poller, control core, REST API, embedded broker,
 * Home Assistant discovery) with one `Driver: snmp` instance per profile against Debian's snmpsimd
 * serving the recordings, and one against the project's simulator. Nothing above the driver knows
 * SNMP: readings, MQTT values and discovery come out as for a Geist unit; on/off/reboot through
 * REST and MQTT reach the agent; what the MIB cannot do is a 409 naming the model.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import { startSnmpsim, type Snmpsim } from "../../testkit/snmpsim.js";
import { waitFor } from "../../testkit/wait.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";

const KEY = "snmp-app-test-key-4f1c9a";
const withKey = { "x-api-key": KEY };

/** Per profile: the unit's serial and its control object of outlet index 1, with on/off/reboot values. */
const UNITS = {
  "apc-rpdu2": {
    serial: "3F1734A01234",
    control: "1.3.6.1.4.1.318.1.1.26.9.2.4.1.5.2",
    on: "1",
    off: "2",
    reboot: "3",
  },
  "apc-rpdu": {
    serial: "ZA1012345678",
    control: "1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.2",
    on: "1",
    off: "2",
    reboot: "3",
  },
  "raritan-px2": {
    serial: "PKE0954001",
    control: "1.3.6.1.4.1.13742.6.4.1.2.1.2.1.2",
    on: "1",
    off: "0",
    reboot: "2",
  },
  "raritan-px": {
    serial: "PKL8A00123",
    control: "1.3.6.1.4.1.13742.4.1.2.2.1.3.2",
    on: "1",
    off: "0",
    reboot: "2",
  },
  "servertech-sentry4": {
    serial: "ABEF0001234",
    control: "1.3.6.1.4.1.1718.4.1.8.5.1.2.1.1.2",
    on: "1",
    off: "2",
    reboot: "3",
  },
} as const;
type Profile = keyof typeof UNITS;
const PROFILES = Object.keys(UNITS) as Profile[];

const variable = (id: string) => `SERVICE_PDU_${id.toUpperCase().replaceAll("-", "_")}`;

describe("SNMP PDUs through the bridge", () => {
  let agent: Snmpsim;
  let simulator: SnmpSimulator;
  let h: AppHarness<never>;

  before(async () => {
    agent = await startSnmpsim();
    simulator = await startSnmpSimulator({
      profile: "apc-rpdu2",
      port: 0,
      community: "lab-read",
      writeCommunity: "lab-write",
    });
    const env: Record<string, string> = {
      [`${variable("sim")}_COMMUNITY`]: "lab-read",
      [`${variable("sim")}_WRITE_COMMUNITY`]: "lab-write",
    };
    for (const p of PROFILES) {
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
        "    RelayProtection: 0", // on, off and reboot in quick succession (test/app/relay-protection.test.ts)
      ].join("\n");
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          ...PROFILES.map((p) => pdu(p, agent.port)),
          pdu("sim", simulator.port),
          `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: ${KEY} }`,
          // Values are republished every 2 s, so a subscriber that came late sees every one.
          "HomeAssistant: { SensorExpireAfterSeconds: 4 }",
        ].join("\n"),
      env,
      waitForFirstPolls: true,
    });
  });
  after(async () => {
    await h?.close();
    await simulator?.close();
    await agent?.close();
  });

  it("REST readings of every profile, from the snapshot model; the device id is the serial", async () => {
    const res = await h.api.get("/api/v1/readings");
    assert.equal(res.status, 200);
    const readings = JSON.parse(res.text) as {
      instanceId: string;
      deviceId: string;
      type: string;
      units: string;
      value: number;
    }[];
    for (const p of PROFILES) {
      const mine = readings.filter((r) => r.instanceId === p);
      assert.ok(mine.length > 0, p);
      assert.ok(
        mine.every((r) => r.deviceId === UNITS[p].serial),
        p,
      );
      assert.ok(
        mine.some((r) => r.type === "current" && r.units === "A"),
        p,
      );
    }
    // An AP79xx has no per-outlet metering: its outlets have no readings at all, never zeros.
    const rpdu = readings.filter((r) => r.instanceId === "apc-rpdu") as unknown as { sourceType: string }[];
    assert.ok(rpdu.every((r) => r.sourceType === "entity"));
  });

  for (const p of PROFILES) {
    it(`${p}: on/off over REST and reboot over MQTT reach the agent`, async () => {
      const u = UNITS[p];
      const path = `/api/v1/instances/${p}/outlets/${u.serial}/1/control`;
      for (const action of ["off", "on"] as const) {
        const res = await h.api.post(path, { action }, withKey);
        assert.equal(res.status, 200, res.text);
        assert.equal(await agent.get(p, u.control), u[action]);
      }
      await h.commandsReady(p);
      const audit = await h.publishCommand(`${h.parent}/${p}/${u.serial}/outlets/1/reboot`, "");
      assert.equal(audit.status, 200, JSON.stringify(audit));
      assert.equal(audit.outcome, "done");
      await waitFor(async () => (await agent.get(p, u.control)) === u.reboot, "the reboot SET");
      await h.publishCommand(`${h.parent}/${p}/${u.serial}/outlets/1/set`, "off");
      await waitFor(async () => (await agent.get(p, u.control)) === u.off, "the MQTT off SET");
    });
  }

  it("resetStats is a 409 naming the model where the MIB has no per-outlet reset, 200 on a Raritan PX2", async () => {
    const res = await h.api.post(
      `/api/v1/instances/apc-rpdu2/outlets/3F1734A01234/0/control`,
      { action: "resetStats" },
      withKey,
    );
    assert.equal(res.status, 409, res.text);
    assert.match(res.text, /APC rPDU2 \(AP8xxx\) model AP8858/);
    const px2 = await h.api.post(
      `/api/v1/instances/raritan-px2/outlets/PKE0954001/0/control`,
      { action: "resetStats" },
      withKey,
    );
    assert.equal(px2.status, 200, px2.text);
    assert.equal(await agent.get("raritan-px2", "1.3.6.1.4.1.13742.6.4.7.1.1.1.1.1.8"), "0");
  });

  it("the project's simulator switches through REST and the next polls show it", async () => {
    const serial = "3F1734A01234";
    const res = await h.api.post(
      `/api/v1/instances/sim/outlets/${serial}/1/control`,
      { action: "on" },
      withKey,
    );
    assert.equal(res.status, 200, res.text);
    assert.equal(simulator.unit.outlets[1]?.on, true);
    await waitFor(
      () =>
        h.mqtt
          .latest(`${h.parent}/sim/${serial}/outlets/1/state`)
          .get(`${h.parent}/sim/${serial}/outlets/1/state`)?.payload === "on",
      "the state on MQTT",
    );
  });

  it("Home Assistant discovery of the SNMP units passes the same checks as a Geist unit", async () => {
    const ha = await h.subscribe(["homeassistant/#"]);
    const configs = await waitFor(() => {
      const all = [...ha.latest("homeassistant/")].filter(
        ([t, m]) => t.endsWith("/config") && m.payload !== "",
      );
      // Every SNMP unit's sensors, not only the first hundred configs of whichever unit came first.
      const units = ["_apc-rpdu2", "_raritan-px2", "_servertech-sentry4"];
      const seen = units.every((u) =>
        all.some(([t]) => t.startsWith("homeassistant/sensor/") && t.includes(u)),
      );
      return all.length > 100 && seen ? all : null;
    }, "discovery configs of every SNMP unit");
    const ids = new Set<string>();
    let sensors = 0;
    for (const [topic, m] of configs) {
      const component = topic.split("/")[1] ?? "";
      const config = JSON.parse(m.payload) as Record<string, unknown> & {
        unique_id: string;
        device: { manufacturer?: string };
      };
      assert.ok(!ids.has(config.unique_id), `unique_id ${config.unique_id} once`);
      ids.add(config.unique_id);
      if (["number", "select", "text"].includes(component))
        assert.deepEqual(haDiscoveryProblems(component, config), [], topic);
      if (
        !topic.includes("_apc-rpdu2") &&
        !topic.includes("_raritan-px2") &&
        !topic.includes("_servertech-sentry4")
      )
        continue;
      if (component === "sensor") sensors++;
    }
    assert.ok(sensors > 0);
    const payloads = configs.map(
      ([, m]) => JSON.parse(m.payload) as Record<string, unknown> & { device: { manufacturer?: string } },
    );
    const of = (re: RegExp) => payloads.filter((c) => re.test(String(c.unique_id)));
    // Device classes as for Geist: current, power, energy; and the sensors of temperature.
    assert.ok(of(/apc-rpdu2.*current/).every((c) => c.device_class === "current"));
    assert.ok(of(/apc-rpdu2.*realPower/i).every((c) => c.device_class === "power"));
    assert.ok(of(/apc-rpdu2.*energy/).every((c) => c.device_class === "energy"));
    assert.ok(of(/apc-rpdu2.*temperature/).some((c) => c.device_class === "temperature"));
    // The manufacturer comes from the profile, through the snapshot's vendor.
    assert.ok(of(/raritan-px2/).every((c) => c.device.manufacturer?.startsWith("Raritan") === true));
    assert.ok(
      of(/servertech-sentry4/).every((c) => c.device.manufacturer?.startsWith("ServerTech") === true),
    );
    // Every state topic names a topic that gets a value.
    for (const c of of(/apc-rpdu2/)) {
      const topic = c.state_topic;
      // An event entity's topic carries a message only when something happens.
      if (typeof topic !== "string" || c.event_types !== undefined) continue;
      await waitFor(() => h.mqtt.latest(topic).has(topic), `a value on ${topic}`);
    }
  });

  it("load states, breaker trips and ratings land in the vendor-neutral model", () => {
    // The recording's outlet 3 of the AP8858 is overloaded; breaker 2 of the PX2 is open (tripped).
    const apc = h.app.store.get("apc-rpdu2")?.snapshot?.devices[0];
    assert.deepEqual(apc?.outlets[2]?.alarm, { state: "overload", severity: "alarm", raised: true });
    assert.equal(apc?.entities.find((e) => e.key === "total0")?.ratedCurrent, 16);
    const px2 = h.app.store.get("raritan-px2")?.snapshot?.devices[0];
    const breaker = px2?.entities.find((e) => e.key === "breaker1");
    assert.deepEqual(breaker?.alarm, { state: "open", severity: "alarm", raised: true });
    assert.equal(breaker?.ratedCurrent, 16);
    const sentry = h.app.store.get("servertech-sentry4")?.snapshot?.devices[0];
    assert.equal(sentry?.entities.find((e) => e.key === "breaker2")?.alarm.state, "breakerTripped");
  });
});
