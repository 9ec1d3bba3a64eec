/**
 * The whole bridge against walks recorded from real PDUs by third parties (`../shared/recordings/
 * snmp/`, origins and quirks in its README), served in place by Debian's snmpsimd: one instance
 * per case, and checks of what the bridge publishes (REST readings, MQTT values and topics, Home
 * Assistant discovery) against what the test itself reads out of the walk (./snmp-expect.ts).
 * Reusable: a test lists its cases and calls the checks; a family adds its `Expect`.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startAppHarness, type AppHarness } from "./app-harness.js";
import type { ExpectedDevice, ExpectedReading, Expect } from "./snmp-expect.js";
import { startSnmpsim, type Snmpsim } from "./snmpsim.js";
import { Walk } from "./snmp-walk.js";
import { REPO_ROOT } from "./repo.js";
import { waitFor } from "./wait.js";

/**
 * The shared recordings: `SNMP_RECORDINGS`, else `../shared/recordings/snmp` beside the repository
 * (or beside the directory holding its worktree); null when there is none (tests are skipped).
 */
export const SHARED_RECORDINGS: string | null =
  [
    process.env.SNMP_RECORDINGS,
    join(REPO_ROOT, "..", "shared", "recordings", "snmp"),
    join(REPO_ROOT, "..", "..", "shared", "recordings", "snmp"),
  ].find((p): p is string => p !== undefined && p !== "" && existsSync(join(p, "README.md"))) ?? null;

/** Why the recordings' tests are skipped, or false. */
export const recordingsMissing: string | false =
  SHARED_RECORDINGS === null ? "the shared SNMP recordings (../shared/recordings/snmp) are not here" : false;

export interface RecordingCase {
  /** The instance id in the configuration. */
  readonly instance: string;
  /** The recording's file name (`apc-ap8641.snmprec`); its name without extension is the community. */
  readonly file: string;
  /** `Snmp.Profile`: a walk without a system group needs it named. */
  readonly profile: string;
  /** What the unit reports, read from the walk. */
  readonly expect: Expect;
}

export interface RecordingsRig {
  readonly agent: Snmpsim;
  readonly h: AppHarness<never>;
  /** The expected devices of each case, by instance id. */
  readonly expected: ReadonlyMap<string, readonly ExpectedDevice[]>;
  close(): Promise<void>;
}

const variable = (id: string) => `SERVICE_PDU_${id.toUpperCase().replaceAll("-", "_")}`;
const community = (file: string) => file.replace(/\.(snmprec|snmpwalk)$/, "");

/** snmpsimd on the shared recordings and the App with one instance per case (control enabled). */
export async function startRecordingsRig(
  cases: readonly RecordingCase[],
  apiKey: string,
  /** Another directory of recordings to serve in place (the project's testkit/snmprec/). */
  from?: string,
): Promise<RecordingsRig> {
  const dir = from ?? SHARED_RECORDINGS;
  if (dir === null) throw new Error("no shared SNMP recordings");
  const expected = new Map<string, readonly ExpectedDevice[]>();
  for (const c of cases) expected.set(c.instance, c.expect(await Walk.read(join(dir, c.file)), c.instance));
  const agent = await startSnmpsim({ dataDir: dir });
  try {
    const env: Record<string, string> = {};
    for (const c of cases) {
      env[`${variable(c.instance)}_COMMUNITY`] = community(c.file);
      env[`${variable(c.instance)}_WRITE_COMMUNITY`] = community(c.file);
    }
    const pdu = (c: RecordingCase) =>
      [
        `  ${c.instance}:`,
        "    Driver: snmp",
        `    Connection: { Host: 127.0.0.1, Port: ${agent.port}, Timeout: 3 }`,
        `    Snmp: { Profile: ${c.profile} }`,
        "    PollInterval: 2",
        "    ActionsEnabled: true",
        "    RelayProtection: 0", // commands in quick succession (test/app/relay-protection.test.ts)
      ].join("\n");
    const h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          ...cases.map(pdu),
          `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: ${apiKey} }`,
          // Port 0: two rigs (and any other bridge on the machine) never contend for the default 8081.
          "Health: { Enabled: true, Bind: 127.0.0.1, Port: 0 }",
          // Values are republished every 2 s, so a subscriber that came late sees every one.
          "HomeAssistant: { SensorExpireAfterSeconds: 4 }",
        ].join("\n"),
      env,
      waitForFirstPolls: true,
    });
    return {
      agent,
      h,
      expected,
      async close() {
        await h.close();
        await agent.close();
      },
    };
  } catch (e) {
    await agent.close();
    throw e;
  }
}

interface RestReading {
  readonly instanceId: string;
  readonly deviceId: string;
  readonly outletIndex: number | null;
  readonly entityKey: string | null;
  readonly type: string;
  readonly units: string;
  readonly value: number;
}

const readingKey = (deviceId: string, r: { outlet: number | null; entity: string | null; type: string }) =>
  `${deviceId} ${r.outlet === null ? `entity ${r.entity ?? ""}` : `outlet ${r.outlet}`} ${r.type}`;

/** Every expected reading by its key, with its value and units. */
function expectedReadings(devices: readonly ExpectedDevice[]): Map<string, ExpectedReading> {
  const out = new Map<string, ExpectedReading>();
  for (const d of devices) for (const r of d.readings) out.set(readingKey(d.id, r), r);
  return out;
}

/** REST `/api/v1/readings` of the instance: exactly the expected readings, values and units. */
export async function checkRestReadings(rig: RecordingsRig, instance: string): Promise<void> {
  const res = await rig.h.api.get(`/api/v1/readings?instance=${encodeURIComponent(instance)}`);
  assert.equal(res.status, 200, res.text);
  const actual = new Map<string, RestReading>();
  for (const r of JSON.parse(res.text) as RestReading[]) {
    actual.set(readingKey(r.deviceId, { outlet: r.outletIndex, entity: r.entityKey, type: r.type }), r);
  }
  const want = expectedReadings(rig.expected.get(instance) ?? []);
  assert.deepEqual([...actual.keys()].sort(), [...want.keys()].sort(), `${instance}: the readings published`);
  for (const [key, r] of want) {
    assert.equal(actual.get(key)?.value, r.value, `${instance} ${key}`);
    assert.equal(actual.get(key)?.units, r.units, `${instance} ${key} units`);
  }
}

/** The MQTT topic of a reading. */
/** The lifetime counter beside an energy reading, as a reading of its own topic. */
const lifetimeOf = (r: ExpectedReading): ExpectedReading => ({ ...r, type: "energyLifetime" });

function measurementTopic(
  rig: RecordingsRig,
  instance: string,
  deviceId: string,
  r: ExpectedReading,
): string {
  const where = r.outlet === null ? `entity/${r.entity ?? ""}` : `outlets/${r.outlet}`;
  return `${rig.h.parent}/${instance}/${deviceId}/${where}/measurements/${r.type}`;
}

/**
 * MQTT: each expected reading on its topic with its value; no other measurement topic of the
 * instance; one `label` topic per expected outlet (and none other) with its label; the `state`
 * topic on/off where the unit says, none where it does not.
 */
export async function checkMqtt(rig: RecordingsRig, instance: string): Promise<void> {
  const devices = rig.expected.get(instance) ?? [];
  const mqtt = rig.h.mqtt;
  const topics = new Map<string, number>();
  // An energy reading has its lifetime counter beside it (docs/energy.md): on a recording, which
  // does not move, the counter stays at the first reading (kWh, to the watt-hour).
  const lifetimes = new Map<string, number>();
  for (const d of devices)
    for (const r of d.readings) {
      topics.set(measurementTopic(rig, instance, d.id, r), r.value);
      if (r.type === "energy") lifetimes.set(measurementTopic(rig, instance, d.id, lifetimeOf(r)), r.value);
    }
  for (const [topic, value] of topics) {
    const m = await mqtt.waitFor(topic, undefined, 15_000);
    assert.equal(Number(m.payload), value, topic);
  }
  for (const [topic, value] of lifetimes) {
    const m = await mqtt.waitFor(topic, undefined, 15_000);
    assert.ok(Math.abs(Number(m.payload) - value) < 0.0011, `${topic}: ${m.payload}, the reading ${value}`);
    topics.set(topic, value);
  }
  const prefix = `${rig.h.parent}/${instance}/`;
  const seen = [...mqtt.latest(prefix).keys()];
  const extra = seen.filter((t) => t.includes("/measurements/") && !topics.has(t));
  assert.deepEqual(extra, [], `${instance}: measurement topics of nothing the unit reports`);
  for (const d of devices) {
    const labels = seen.filter((t) => t.startsWith(`${prefix}${d.id}/outlets/`) && t.endsWith("/label"));
    assert.deepEqual(
      labels.sort(),
      d.outlets.map((o) => `${prefix}${d.id}/outlets/${o.index}/label`).sort(),
      `${instance}: the outlets published`,
    );
    for (const o of d.outlets) {
      const base = `${prefix}${d.id}/outlets/${o.index}`;
      assert.equal(mqtt.last(`${base}/label`)?.payload, o.label, `${base}/label`);
      const state = mqtt.last(`${base}/state`)?.payload;
      if (o.state === "unknown") assert.equal(state, undefined, `${base}/state: the unit does not say`);
      else if (o.state === "varies") assert.ok(state === "on" || state === "off", `${base}/state ${state}`);
      else assert.equal(state, o.state, `${base}/state`);
    }
  }
}

/**
 * Home Assistant discovery: a `sensor` for exactly the expected readings; per outlet a `switch`
 * where the unit can switch and a read-only power `binary_sensor` where it cannot; no reboot
 * button on a unit that cannot switch.
 */
export async function checkDiscovery(rig: RecordingsRig, instance: string): Promise<void> {
  const devices = rig.expected.get(instance) ?? [];
  const ha = await rig.h.subscribe(["homeassistant/#"]);
  const mine = (t: string) => t.split("/")[2] === `${rig.h.parent}_${instance}`;
  const measurementSensors = new Set<string>();
  for (const d of devices)
    for (const r of d.readings) {
      measurementSensors.add(measurementTopic(rig, instance, d.id, r));
      // Beside an energy reading, its lifetime counter (docs/energy.md).
      if (r.type === "energy") measurementSensors.add(measurementTopic(rig, instance, d.id, lifetimeOf(r)));
    }
  // Retained configs arrive as a stream: the checks are repeated until they hold (or time out
  // with the last failure).
  await waitFor(
    () => {
      const configs = [...ha.latest("homeassistant/")].filter(
        ([t, m]) => t.endsWith("/config") && m.payload !== "" && mine(t),
      );
      discoveryHolds(instance, devices, configs, measurementSensors);
      return true;
    },
    `${instance}: discovery configs`,
    15_000,
  );
}

function discoveryHolds(
  instance: string,
  devices: readonly ExpectedDevice[],
  configs: readonly (readonly [string, { readonly payload: string }])[],
  measurementSensors: ReadonlySet<string>,
): void {
  const parsed = configs.map(
    ([t, m]) => [t.split("/")[1] ?? "", JSON.parse(m.payload) as Record<string, unknown>] as const,
  );
  const stateTopics = parsed
    .filter(([component, c]) => component === "sensor" && String(c.state_topic).includes("/measurements/"))
    .map(([, c]) => String(c.state_topic));
  assert.deepEqual(stateTopics.sort(), [...measurementSensors].sort(), `${instance}: sensors announced`);
  for (const d of devices) {
    // By topic, not unique_id: an id with characters a discovery id cannot hold ("...cut...") is hashed there.
    const ofOutlets = (component: string) =>
      parsed.filter(([k, c]) => k === component && String(c.state_topic).includes(`/${d.id}/outlets/`))
        .length;
    assert.equal(ofOutlets("switch"), d.canSwitch ? d.outlets.length : 0, `${instance}: switches`);
    if (!d.canSwitch) {
      const power = parsed.filter(
        ([k, c]) =>
          k === "binary_sensor" &&
          c.device_class === "power" &&
          String(c.state_topic).includes(`/${d.id}/outlets/`),
      );
      assert.equal(power.length, d.outlets.length, `${instance}: read-only power sensors`);
      const reboots = parsed.filter(
        ([k, c]) => k === "button" && String(c.command_topic).endsWith("/reboot"),
      );
      assert.equal(reboots.length, 0, `${instance}: no reboot button`);
    }
  }
}
