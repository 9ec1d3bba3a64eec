/**
 * Home Assistant discovery holds only what can work, over every simulated family: a Geist single
 * unit, a OneView cluster and each unit of the SNMP simulator, through the whole bridge (the real
 * App, its embedded broker, control on), with one outlet of each made `Protected` live.
 *
 * - every `sensor` and `binary_sensor` gets a value its template can show (a load percent that is
 *   never known would stay `unknown` for ever);
 * - every `button` pressed is carried out, never refused by a rule that would refuse it every time
 *   (a protected outlet's Reboot, a device that cannot reset an outlet's energy);
 * - no two Home Assistant devices have the same name (40 PDUs must not give 40 "Outlet 1");
 * - every config passes the project's Home Assistant rules (testkit/ha-mqtt-rules.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Config } from "../../src/config/schema.js";
import { diffConfig } from "../../src/config/kubernetes/diff.js";
import { parseConfigText } from "../../src/config/load.js";
import type { Simulator } from "../../src/simulator/index.js";
import { SIM_PROFILES } from "../../src/simulator/snmp/units.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import type { Received, Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";

type Json = Record<string, unknown>;
type Sims = "geist" | "oneview";

const variable = (id: string) => `SERVICE_PDU_${id.toUpperCase().replaceAll("-", "_")}`;

/** Whether a sensor's payload gives its template a value Home Assistant can show. */
function shows(config: Json, payload: string): boolean {
  if (payload === "") return false;
  const template = typeof config.value_template === "string" ? config.value_template : null;
  const numeric = config.unit_of_measurement !== undefined || config.state_class !== undefined;
  const field = template === null ? null : /^\{\{ value_json\.(\w+) \}\}$/.exec(template)?.[1];
  if (field !== undefined && field !== null) {
    const value = (JSON.parse(payload) as Json)[field];
    return typeof value === "number" && Number.isFinite(value);
  }
  if (template === null && numeric) return Number.isFinite(Number(payload));
  return true;
}

describe("discovery holds only what can work, over every simulated family", () => {
  const snmp: SnmpSimulator[] = [];
  let h: AppHarness<Sims>;
  let ha: Recorder;
  /** config topic → config, as a fresh subscriber sees them once the protection applied. */
  let configs: Map<string, Json>;
  /** The instance id and its first outlet's device id, protected live. */
  const protectedOutlets = new Map<string, string>();

  const yamlOf = (sims: Readonly<Record<Sims, Simulator>>, overrides: boolean) =>
    [
      "Mqtt:",
      "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
      "Pdus:",
      ...(["geist", "oneview"] as const).map((id) =>
        [
          pduYaml(id, sims[id], { pollInterval: 1, actionsEnabled: true, relayProtection: 0 }),
          ...protection(id, overrides),
        ].join("\n"),
      ),
      ...SIM_PROFILES.map((p, n) =>
        [
          `  ${p}:`,
          "    Driver: snmp",
          `    Connection: { Host: 127.0.0.1, Port: ${snmp[n]?.port ?? 0}, Timeout: 2 }`,
          "    PollInterval: 1",
          "    ActionsEnabled: true",
          // Every button is pressed in turn, several on one outlet within seconds.
          "    RelayProtection: 0",
          ...protection(p, overrides),
        ].join("\n"),
      ),
      "HomeAssistant: { SensorExpireAfterSeconds: 4 }",
    ].join("\n");

  const protection = (id: string, on: boolean): string[] => {
    const device = protectedOutlets.get(id);
    if (!on || device === undefined) return [];
    return [
      "    Overrides:",
      "      Outlets:",
      `        ${JSON.stringify(device)}: { "0": { Protected: true } }`,
    ];
  };

  before(async () => {
    const env: Record<string, string> = {};
    for (const profile of SIM_PROFILES) {
      snmp.push(
        await startSnmpSimulator({ profile, port: 0, community: "ro", writeCommunity: "rw", outlets: 4 }),
      );
      env[`${variable(profile)}_COMMUNITY`] = "ro";
      env[`${variable(profile)}_WRITE_COMMUNITY`] = "rw";
    }
    h = await startAppHarness<Sims>({
      sims: { geist: { outlets: 4, seed: 1 }, oneview: { oneview: true, outlets: 3, seed: 2 } },
      yaml: (sims) => yamlOf(sims, false),
      env,
      waitForFirstPolls: true,
    });
    // Outlet 0 of each instance's first device becomes Protected, live (as the Kubernetes source does).
    for (const instance of h.config.instances) {
      const device = h.app.store.get(instance.id)?.snapshot?.devices[0]?.id;
      assert.ok(device !== undefined, instance.id);
      protectedOutlets.set(instance.id, device);
    }
    ha = await h.subscribe(["homeassistant/#"]);
    await waitFor(() => ha.messages.length > 300, "the retained discovery", 20_000);
    // The first discovery of every instance whole (nothing new for a second) before the change: a
    // config still arriving from it must not count as republished after the change.
    let count = -1;
    let stillSince = Date.now();
    await waitFor(
      () => {
        if (ha.messages.length !== count) {
          count = ha.messages.length;
          stillSince = Date.now();
          return false;
        }
        return Date.now() - stillSince >= 1000;
      },
      "the first discovery complete",
      20_000,
    );
    const mark = ha.messages.length;
    const next: Config = await parseConfigText(yamlOf(h.sims, true), "app-test.yaml", env);
    h.app.applyLive(next, diffConfig(h.config, next).live);
    // Each instance's discovery is republished whole after the change: once every instance's State
    // sensor config came again, and nothing more for a second, it is complete.
    const republished = (id: string, device: string) =>
      ha.messages
        .slice(mark)
        .some((m) => m.topic === `homeassistant/sensor/pdu-bridge_${id}/device_${device}_state/config`);
    let seen = -1;
    let quietSince = Date.now();
    configs = await waitFor(
      () => {
        if (![...protectedOutlets].every(([id, device]) => republished(id, device))) return null;
        if (ha.messages.length !== seen) {
          seen = ha.messages.length;
          quietSince = Date.now();
          return null;
        }
        if (Date.now() - quietSince < 1000) return null;
        const now = new Map<string, Json>();
        for (const [topic, m] of ha.latest("homeassistant/")) {
          if (topic.endsWith("/config") && m.payload !== "") now.set(topic, JSON.parse(m.payload) as Json);
        }
        return now;
      },
      "the discovery republished with the protected outlets",
      40_000,
    );
  });

  after(async () => {
    await h?.close();
    for (const s of snmp) await s.close();
  });

  it("covers every family", () => {
    for (const instance of h.config.instances) {
      assert.ok(
        [...configs.keys()].some((t) => t.includes(`/pdu-bridge_${instance.id}/`)),
        `${instance.id} has discovery`,
      );
    }
  });

  it("every config passes the Home Assistant rules", () => {
    for (const [topic, config] of configs) {
      const component = topic.split("/")[1] ?? "";
      assert.deepEqual(haDiscoveryProblems(component, config), [], topic);
    }
  });

  it("every sensor and binary sensor gets a value it can show", async () => {
    const values = h.mqtt;
    const missing = (): string[] => {
      const out: string[] = [];
      for (const [topic, config] of configs) {
        const component = topic.split("/")[1];
        if (component !== "sensor" && component !== "binary_sensor") continue;
        const state = String(config.state_topic);
        const seen: Received[] = values.on(state);
        if (!seen.some((m) => shows(config, m.payload)))
          out.push(`${topic} (${state}: ${JSON.stringify(seen.at(-1)?.payload ?? null)})`);
      }
      return out;
    };
    await waitFor(() => missing().length === 0, "a value for every sensor", 15_000).catch(() => undefined);
    assert.deepEqual(missing(), []);
  });

  it("no button is refused every time: each one pressed is carried out", async () => {
    const buttons = [...configs].filter(([topic]) => topic.startsWith("homeassistant/button/"));
    assert.ok(buttons.length > 0);
    for (const instance of h.config.instances) await h.commandsReady(instance.id);
    // Group buttons first (a reboot of a group's outlets would leave them busy for an outlet's reboot).
    buttons.sort(
      ([a], [b]) => Number(a.includes("_group_") === false) - Number(b.includes("_group_") === false),
    );
    for (const [topic, config] of buttons) {
      const audit = await h.publishCommand(String(config.command_topic), String(config.payload_press));
      const busy = audit.status === 409 && audit.problem === "outlet-busy";
      assert.ok(audit.status === 200 || busy, `${topic}: ${String(audit.status)} ${String(audit.detail)}`);
    }
  });

  it("a protected outlet is offered no switch and no Reboot, and shows its power", () => {
    for (const [id, device] of protectedOutlets) {
      const of = (component: string, what: string) =>
        configs.has(`homeassistant/${component}/pdu-bridge_${id}/outlet_${device}_0_${what}/config`);
      assert.equal(of("switch", "power"), false, `${id}: no switch`);
      assert.equal(of("button", "reboot"), false, `${id}: no Reboot`);
      assert.equal(of("binary_sensor", "power"), true, `${id}: its power as a binary sensor`);
    }
  });

  it("every Home Assistant device has a name of its own, which names its PDU", () => {
    const names = new Map<string, string>();
    const pduNames = new Map<string, string>();
    for (const config of configs.values()) {
      const device = config.device as { identifiers: string[]; name: string; via_device?: string };
      const id = device.identifiers[0] ?? "";
      names.set(id, device.name);
      if (device.via_device === undefined) pduNames.set(id, device.name);
    }
    const byName = new Map<string, string[]>();
    for (const [id, name] of names) byName.set(name, [...(byName.get(name) ?? []), id]);
    assert.deepEqual(
      [...byName].filter(([, ids]) => ids.length > 1),
      [],
      "no two devices share a name",
    );
    for (const config of configs.values()) {
      const device = config.device as { name: string; via_device?: string };
      if (device.via_device === undefined || !String(config.unique_id).includes("_outlet_")) continue;
      const pdu = pduNames.get(device.via_device);
      assert.ok(pdu !== undefined && device.name.includes(pdu), `${device.name} names its PDU ${pdu}`);
    }
  });
});
