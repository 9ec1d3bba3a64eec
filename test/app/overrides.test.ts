/**
 * Overrides (contract §11) through the real composed App: real simulators, the real loader, the
 * embedded broker and a real subscriber. Renamed things are renamed in MQTT, Home Assistant
 * discovery and REST (the PDU keeps its label); hidden things have no topics and no discovery
 * configs but are in REST with `hidden: true`; `Measurements` limits the types; a protected outlet
 * (alone or in a group) and a protected group refuse off and reboot over REST and MQTT with zero
 * writes at the simulator, while on stays allowed; overrides that name nothing are warned about.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { OutletRef } from "../../src/pdu/model.js";
import type { Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import type { HttpResponse } from "../../testkit/http-harness.js";
import { waitFor, type Recorder } from "../../testkit/mqtt-client.js";

const KEY = "overrides-test-key-41c9e7";
const withKey = { "x-api-key": KEY };

type Sims = "main" | "cluster";

interface ReadingRow {
  instanceId: string;
  deviceId: string;
  source: string;
  sourceType: string;
  outletIndex: number | null;
  entityKey: string | null;
  type: string;
  hidden?: boolean;
}

/** Writes (not logins) the simulator received. */
const writes = (sim: Simulator): number => sim.writes().length;

function problemOf(r: HttpResponse, status: number, detail: RegExp): void {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers["content-type"] ?? "", /^application\/problem\+json/);
  const body = r.json<{ type: string; detail: string }>();
  assert.match(body.detail, detail);
  if (status === 409) assert.match(body.type, /protected$/);
}

describe("overrides through the composed App", () => {
  let h: AppHarness<Sims>;
  let ha: Recorder;
  let dev: string;
  /** Group 2 of the cluster: outlets of several units; its second member is protected. */
  let group2: OutletRef[];
  let shielded: OutletRef;
  /** Group 9 (made for the test): protected as a group, no protected outlet. */
  let group9: OutletRef[];

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: { main: { outlets: 4 }, cluster: { oneview: { members: 2 }, outlets: 4, seed: 5 } },
      beforeStart: (s) => {
        const ids = s.cluster.deviceIds();
        s.cluster.setGroupMembers("9", [
          { deviceId: ids[0]!, index: 3 },
          { deviceId: ids[1]!, index: 3 },
        ]);
      },
      yaml: (s) => {
        const main = s.main.deviceIds()[0]!;
        const members = s.cluster.groupMembers("2");
        const protectedMember = members[1]!;
        return appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 2, relayProtection: 0 }) +
              [
                "",
                "    Measurements: [REALPOWER, energy, Current]",
                "    Overrides:",
                "      Outlets:",
                `        ${JSON.stringify(main)}:`,
                '          "0": { Name: core-switch, Protected: true }',
                '          "1": { Hidden: true }',
                '          "99": { Name: nowhere }',
                "        NOSUCHDEVICE:",
                '          "0": { Hidden: true }',
                "      Entities:",
                `        ${JSON.stringify(main)}:`,
                '          total0: { Name: "Left bank" }',
                "          breaker1: { Hidden: true }",
              ].join("\n"),
            pduYaml("cluster", s.cluster, { actionsEnabled: true, pollInterval: 2, relayProtection: 0 }) +
              [
                "",
                "    Overrides:",
                "      Outlets:",
                `        ${JSON.stringify(protectedMember.deviceId)}:`,
                `          "${protectedMember.index}": { Protected: true }`,
                "      Groups:",
                '        "2": { Name: db-cluster }',
                '        "9": { Protected: true }',
                "        nosuchgroup: { Hidden: true }",
              ].join("\n"),
          ],
        });
      },
    });
    dev = h.sims.main.deviceIds()[0]!;
    group2 = h.sims.cluster.groupMembers("2");
    shielded = group2[1]!;
    group9 = h.sims.cluster.groupMembers("9");
    ha = await h.subscribe(["homeassistant/#"]);
    await h.waitForPoll("lab");
    await h.waitForPoll("cluster");
    await h.commandsReady("lab");
    await h.commandsReady("cluster");
  });
  after(() => h?.close());

  /** The retained discovery configs received so far (non-empty payloads), by topic. */
  const configs = (): Map<string, string> =>
    new Map(
      [...ha.latest("homeassistant/")].filter(([, m]) => m.payload !== "").map(([t, m]) => [t, m.payload]),
    );

  const readings = async (instance: string): Promise<ReadingRow[]> => {
    const r = await h.api.get(`/api/v1/readings?instance=${instance}`);
    assert.equal(r.status, 200, r.text);
    return r.json<ReadingRow[]>();
  };

  it("renames an outlet and an entity in MQTT, discovery and REST; the PDU keeps its label", async () => {
    const label = await h.mqtt.waitFor(`${h.parent}/lab/${dev}/outlets/0/label`);
    assert.equal(label.payload, "core-switch");
    await waitFor(
      () => [...configs().values()].some((p) => / core-switch"/.test(p) && p.includes(`"name":"lab `)),
      "the outlet's Home Assistant device named core-switch",
    );
    await waitFor(
      () => [...configs().values()].some((p) => p.includes(`"name":"Left bank real power"`)),
      "the total0 sensor named after the override",
    );
    // The label text entity of a renamed outlet would show the Name and write it back: there is none.
    const labelText = (index: number) => (p: string) => p.includes(`_outlet_${dev}_${index}_label"`);
    await waitFor(() => [...configs().values()].some(labelText(2)), "the label text of outlet 2");
    assert.ok(![...configs().values()].some(labelText(0)), "no label text for the renamed outlet");
    const rows = await readings("lab");
    assert.ok(rows.some((r) => r.outletIndex === 0 && r.source === "core-switch"));
    assert.ok(rows.some((r) => r.entityKey === "total0" && r.source === "Left bank"));
    assert.notEqual(h.sims.main.outlet(dev, 0).label, "core-switch", "nothing was written to the PDU");
    // The group's Home Assistant device carries the override's name too.
    // (Another instance: its discovery may arrive after lab's.)
    await waitFor(
      () => [...configs().values()].some((p) => p.includes(`"name":"db-cluster"`)),
      "the group's Home Assistant device named db-cluster",
    );
  });

  it("hides an outlet and an entity from MQTT and discovery; REST lists them with hidden: true", async () => {
    // A full walk has happened (values are published on every poll): compare against a visible outlet.
    await h.mqtt.waitFor(`${h.parent}/lab/${dev}/outlets/2/measurements/realPower`);
    const hiddenPrefix = `${h.parent}/lab/${dev}/outlets/1/`;
    assert.deepEqual(
      h.mqtt.messages.filter((m) => m.topic.startsWith(hiddenPrefix) && m.payload !== ""),
      [],
      "no topic of the hidden outlet",
    );
    assert.deepEqual(
      h.mqtt.messages.filter((m) => m.topic.includes(`/lab/${dev}/entity/breaker1/`)),
      [],
      "no topic of the hidden entity",
    );
    assert.ok(h.mqtt.messages.some((m) => m.topic.includes(`/lab/${dev}/entity/breaker0/`)));
    const all = [...configs().values()];
    assert.ok(all.length > 0);
    assert.ok(!all.some((p) => p.includes(`/lab/${dev}/outlets/1/`)), "no discovery config of outlet 1");
    assert.ok(
      !all.some((p) => p.includes(`/lab/${dev}/entity/breaker1/`)),
      "no discovery config of breaker1",
    );
    assert.ok(all.some((p) => p.includes(`/lab/${dev}/outlets/2/`)));

    const rows = await readings("lab");
    const outlet1 = rows.filter((r) => r.outletIndex === 1);
    assert.ok(outlet1.length > 0 && outlet1.every((r) => r.hidden === true), JSON.stringify(outlet1));
    const breaker1 = rows.filter((r) => r.entityKey === "breaker1");
    assert.ok(breaker1.length > 0 && breaker1.every((r) => r.hidden === true));
    assert.ok(rows.filter((r) => r.outletIndex === 2).every((r) => !("hidden" in r)));
  });

  it("Measurements keeps only the listed types (ignoring case) on MQTT, discovery and REST", async () => {
    const types = new Set((await readings("lab")).map((r) => r.type));
    assert.deepEqual([...types].sort(), ["current", "energy", "realPower"]);
    const measured = h.mqtt.messages
      .filter((m) => m.topic.startsWith(`${h.parent}/lab/`) && m.topic.includes("/measurements/"))
      .map((m) => m.topic.split("/").at(-1));
    // energyLifetime: the lifetime counter of the energy kept (docs/energy.md), present with it.
    assert.deepEqual([...new Set(measured)].sort(), ["current", "energy", "energyLifetime", "realPower"]);
    assert.ok(
      ![...configs().values()].some((p) => p.includes(`/lab/${dev}/outlets/2/measurements/apparentPower`)),
      "no apparentPower sensor on lab",
    );
    // The other instance has no Measurements: every type.
    assert.ok((await readings("cluster")).some((r) => r.type === "apparentPower"));
  });

  it("protected outlet: off and reboot refused over REST (409, nothing sent); on and resetStats allowed", async () => {
    const path = `/api/v1/instances/lab/outlets/${dev}/0/control`;
    const before = writes(h.sims.main);
    problemOf(await h.api.post(path, { action: "off" }, withKey), 409, /outlet .*\/0 .* is protected/);
    problemOf(await h.api.post(path, { action: "reboot" }, withKey), 409, /protected/);
    assert.equal(writes(h.sims.main), before, "zero writes at the simulator");
    assert.equal(h.sims.main.outlet(dev, 0).state, "on");
    const on = await h.api.post(path, { action: "on" }, withKey);
    assert.equal(on.status, 200, on.text);
    const reset = await h.api.post(path, { action: "resetStats" }, withKey);
    assert.equal(reset.status, 200, reset.text);
    assert.equal(writes(h.sims.main), before + 2);
    // The unprotected neighbour switches off as usual.
    const off = await h.api.post(
      `/api/v1/instances/lab/outlets/${dev}/2/control`,
      { action: "off" },
      withKey,
    );
    assert.equal(off.status, 200, off.text);
    assert.equal(h.sims.main.outlet(dev, 2).state, "off");
  });

  it("protected outlet: MQTT set off and reboot refused and audited, nothing sent; set on allowed", async () => {
    const base = `${h.parent}/lab/${dev}/outlets/0`;
    const before = writes(h.sims.main);
    const off = await h.publishCommand(`${base}/set`, "OFF");
    assert.equal(off.status, 409);
    assert.equal(off.outcome, "refused");
    const reboot = await h.publishCommand(`${base}/reboot`, "");
    assert.equal(reboot.status, 409);
    assert.equal(writes(h.sims.main), before, "zero writes at the simulator");
    const on = await h.publishCommand(`${base}/set`, "on");
    assert.equal(on.status, 200);
    assert.equal(writes(h.sims.main), before + 1);
  });

  it("a group with a protected outlet: off and reboot refused whole, naming it, zero writes; on allowed", async () => {
    const sim = h.sims.cluster;
    const path = "/api/v1/instances/cluster/groups/2/control";
    const before = writes(sim);
    const name = `${shielded.deviceId}/${shielded.index}`;
    problemOf(
      await h.api.post(path, { action: "off" }, withKey),
      409,
      new RegExp(`protected outlets ${name}`),
    );
    problemOf(await h.api.post(path, { action: "reboot" }, withKey), 409, new RegExp(name));
    const mqttOff = await h.publishCommand(`${h.parent}/cluster/groups/2/set`, "off");
    assert.equal(mqttOff.status, 409);
    const mqttReboot = await h.publishCommand(`${h.parent}/cluster/groups/2/set`, "reboot");
    assert.equal(mqttReboot.status, 409);
    assert.equal(writes(sim), before, "zero writes at the simulator for the whole group");
    for (const m of group2) assert.equal(sim.outlet(m.deviceId, m.index).state, "on");

    const on = await h.api.post(path, { action: "on" }, withKey);
    assert.equal(on.status, 200, on.text);
    assert.equal(writes(sim), before + group2.length);
  });

  it("a protected group: off refused over REST and MQTT with zero writes; on allowed", async () => {
    const sim = h.sims.cluster;
    const before = writes(sim);
    problemOf(
      await h.api.post("/api/v1/instances/cluster/groups/9/control", { action: "off" }, withKey),
      409,
      /group 9 is protected/,
    );
    assert.equal((await h.publishCommand(`${h.parent}/cluster/groups/9/set`, "off")).status, 409);
    assert.equal(writes(sim), before);
    assert.equal((await h.publishCommand(`${h.parent}/cluster/groups/9/set`, "on")).status, 200);
    assert.equal(writes(sim), before + group9.length);
  });

  it("warns once per override that names nothing, after the instance's first poll", () => {
    const problems = h
      .logs()
      .filter((l) => l.msg === "override names nothing on the PDU (ignored until it does)")
      .map((l) => String(l.problem));
    assert.ok(
      problems.some((p) => p.startsWith("Pdus.lab.Overrides.Outlets.NOSUCHDEVICE:")),
      problems.join("\n"),
    );
    assert.ok(problems.some((p) => p.startsWith(`Pdus.lab.Overrides.Outlets.${dev}.99:`)));
    assert.ok(problems.some((p) => p.startsWith("Pdus.cluster.Overrides.Groups.nosuchgroup:")));
    assert.equal(problems.length, 3, problems.join("\n"));
  });
});
