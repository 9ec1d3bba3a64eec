/**
 * Settings writes (contract §10) through the composed App against real simulators over real HTTP:
 * every outlet setting over REST and over MQTT reaches the PDU as one `set` write with a
 * Content-Length body, the retained topic and the Home Assistant entity follow; device, entity and
 * OneView group labels; every invalid value is refused (400) with zero writes; an instance without
 * ActionsEnabled is refused (409) with zero writes.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { OUTLET_SETTINGS, type SettingRow } from "../../src/control/settings.js";
import type { RecordedRequest, Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor, type Recorder } from "../../testkit/mqtt-client.js";
import { getJson } from "../../testkit/sim-http.js";

const KEY = "settings-key-5f1c0a";
const AUTH = { "x-api-key": KEY };

type Sims = "main" | "cluster" | "readonly";

/** A value of each setting different from what the simulator starts with (and from each other). */
const NEW_VALUES: Readonly<Record<string, readonly (string | number)[]>> = {
  label: ["web-01", "db primary"],
  onDelay: [10, 3600],
  offDelay: [7, 0],
  rebootDelay: [12, 30],
  poaAction: ["off", "on"],
};

/** The one write a request made: asserts it is a `set` with a Content-Length body, not chunked. */
function oneSet(sim: Simulator, before: number, path: string): RecordedRequest {
  const writes = sim.writes().slice(before);
  assert.equal(writes.length, 1, `exactly one write: ${JSON.stringify(writes.map((w) => w.path))}`);
  const w = writes[0]!;
  assert.equal(w.method, "POST");
  assert.equal(w.cmd, "set");
  assert.equal(w.path, path);
  assert.equal(w.chunked, false, "not chunked");
  assert.equal(w.contentLength, Buffer.byteLength(JSON.stringify(w.body)), "Content-Length is the body's");
  return w;
}

const dataOf = (w: RecordedRequest): unknown => (w.body as { data: unknown }).data;

/** What the simulator itself answers for `path` (a read over real HTTP, as the bridge polls). */
const simRead = async (sim: Simulator, path: string): Promise<unknown> =>
  (await getJson(`${sim.scheme}://${sim.host}:${sim.port}${path}`)).data;

describe("settings writes through the composed App", () => {
  let h: AppHarness<Sims>;
  /** A subscriber to the discovery configs. */
  let ha: Recorder;
  let dev: string;

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: {
        main: { outlets: 4 },
        cluster: { oneview: { members: 1 }, outlets: 2, seed: 3 },
        readonly: { outlets: 2, seed: 2 },
      },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 2 }),
            pduYaml("cl", s.cluster, { actionsEnabled: true, pollInterval: 2 }),
            pduYaml("ro", s.readonly, { actionsEnabled: false, pollInterval: 2 }),
          ],
        }),
    });
    for (const id of ["lab", "cl", "ro"]) await h.waitForPoll(id);
    ha = await h.subscribe(["homeassistant/#"]);
    await h.commandsReady("lab");
    dev = h.sims.main.deviceIds()[0]!;
  });
  after(() => h?.close());

  /** A settings write over REST with the right key. */
  const patch = (path: string, body: unknown) => h.api.send(path, { method: "PATCH", body, headers: AUTH });
  const outletPath = (index: number) => `/api/v1/instances/lab/outlets/${dev}/${index}`;
  const settingTopic = (index: number, row: SettingRow) =>
    `${h.parent}/lab/${dev}/outlets/${index}/${row.name}`;
  const simValue = (index: number, row: SettingRow): unknown => h.sims.main.outlet(dev, index)[row.name];

  for (const row of OUTLET_SETTINGS) {
    it(`REST: ${row.name} is written with one set, and its retained topic and entity follow`, async () => {
      const value = NEW_VALUES[row.name]![0]!;
      const before = h.sims.main.writes().length;
      const res = await patch(outletPath(1), { [row.name]: value });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json(), {
        ok: true,
        instanceId: "lab",
        deviceId: dev,
        index: 1,
        settings: { [row.name]: value },
      });
      const w = oneSet(h.sims.main, before, `/api/dev/${dev}/outlet/1`);
      assert.deepEqual(dataOf(w), { [row.name]: value });
      assert.equal(simValue(1, row), value);
      await h.mqtt.waitFor(settingTopic(1, row), (m) => m.payload === String(value));
      // The Home Assistant entity reads that topic and commands the /set topic.
      const config = [...ha.latest("homeassistant/").values()]
        .map((m) => (m.payload === "" ? null : (JSON.parse(m.payload) as Record<string, unknown>)))
        .find((c) => c?.state_topic === settingTopic(1, row));
      assert.ok(config, `a discovery config reads ${settingTopic(1, row)}`);
      assert.equal(config.command_topic, `${settingTopic(1, row)}/set`);
      assert.equal(config.entity_category, "config");
    });

    it(`MQTT: ${row.name}/set is written with one set, and its retained topic follows`, async () => {
      const value = NEW_VALUES[row.name]![1]!;
      const before = h.sims.main.writes().length;
      const line = await h.publishCommand(`${settingTopic(2, row)}/set`, String(value));
      assert.equal(line.status, 200, JSON.stringify(line));
      assert.equal(line.action, "set");
      assert.equal(line.target, `outlet ${dev}/2`);
      const w = oneSet(h.sims.main, before, `/api/dev/${dev}/outlet/2`);
      assert.deepEqual(dataOf(w), { [row.name]: value });
      assert.equal(simValue(2, row), value);
      await h.mqtt.waitFor(settingTopic(2, row), (m) => m.payload === String(value));
    });
  }

  it("a subscriber arriving later gets every setting of an outlet retained", async () => {
    const late = await h.subscribe([`${h.parent}/lab/${dev}/outlets/1/#`]);
    for (const row of OUTLET_SETTINGS) {
      const m = await late.waitFor(settingTopic(1, row));
      assert.equal(m.retain, true, row.name);
      assert.equal(m.payload, String(simValue(1, row)), row.name);
    }
  });

  it("REST: several settings at once are one set write, echoed in the answer", async () => {
    const body = { label: "rack-fan", onDelay: 3, offDelay: 4, rebootDelay: 9, poaAction: "last" };
    const before = h.sims.main.writes().length;
    const res = await patch(outletPath(0), body);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json<{ settings: unknown }>().settings, body);
    assert.deepEqual(dataOf(oneSet(h.sims.main, before, `/api/dev/${dev}/outlet/0`)), body);
    const audit = await waitFor(
      () => h.audits().findLast((l) => l.source === "rest" && l.target === `outlet ${dev}/0`),
      "the audit line",
    );
    assert.equal(audit.action, "set");
    assert.equal(audit.status, 200);
    assert.ok(!JSON.stringify(h.audits()).includes(KEY), "the key is never logged");
  });

  const BAD_BODIES: readonly [string, unknown][] = [
    ["a delay as a string", { onDelay: "10" }],
    ["a fractional delay", { offDelay: 10.5 }],
    ["a negative delay", { rebootDelay: -1 }],
    ["a delay over 3600", { onDelay: 3601 }],
    ["a boolean delay", { onDelay: true }],
    ["a null delay", { onDelay: null }],
    ["an unknown power-on action", { poaAction: "sometimes" }],
    ["a power-on action in capitals", { poaAction: "ON" }],
    ["an empty label", { label: "" }],
    ["a 33-character label", { label: "x".repeat(33) }],
    ["a label with a control character", { label: "web\u000701" }],
    ["a label with a newline", { label: "web\n01" }],
    ["a label with a right-to-left override (U+202E)", { label: "web-\u202e10-bew" }],
    ["a label with a line separator (U+2028)", { label: "web\u202801" }],
    ["a label with a bidirectional isolate (U+2066)", { label: "\u2066web-01\u2069" }],
    ["a numeric label", { label: 5 }],
    ["an unknown field", { label: "ok", colour: "red" }],
    ["an empty body", {}],
    ["an array", [{ label: "x" }]],
    ["JSON null", "null"],
    ["not JSON", "{label:"],
  ];

  for (const [what, body] of BAD_BODIES) {
    it(`REST: ${what} is 400 with no write`, async () => {
      const before = h.sims.main.writes().length;
      const res = await h.api.send(outletPath(3), {
        method: "PATCH",
        body,
        headers: { ...AUTH, "content-type": "application/json" },
      });
      assert.equal(res.status, 400, res.text);
      assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
      assert.equal(h.sims.main.writes().length, before, "nothing was written");
    });
  }

  it("REST: a device, an entity or a group takes label only (a delay is 400, no write)", async () => {
    const before = h.sims.main.writes().length;
    for (const path of [
      `/api/v1/instances/lab/devices/${dev}`,
      `/api/v1/instances/lab/entities/${dev}/breaker0`,
    ]) {
      const res = await patch(path, { onDelay: 5 });
      assert.equal(res.status, 400, res.text);
    }
    assert.equal(h.sims.main.writes().length, before);
  });

  it("REST: a device, entity or group label with a bidirectional override or a line separator is 400, no write", async () => {
    const cluster = h.sims.cluster;
    const before = [h.sims.main.writes().length, cluster.writes().length];
    for (const [path, label] of [
      [`/api/v1/instances/lab/devices/${dev}`, "Rack 7\u202e"],
      [`/api/v1/instances/lab/entities/${dev}/breaker0`, "Left\u2028bank"],
      ["/api/v1/instances/cl/groups/total", "\u2067All racks"],
    ] as const) {
      const res = await patch(path, { label });
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.match(
        res.json<{ detail: string }>().detail,
        /"label" in the body must be 1 to 32 printable characters \(.*nothing that changes how text is displayed: no bidirectional formatting characters such as U\+202E, no line or paragraph separators\)/,
      );
    }
    assert.deepEqual([h.sims.main.writes().length, cluster.writes().length], before, "nothing was written");
  });

  it("REST: renames a device and an entity; the readings show the new names after the next poll", async () => {
    const sim = h.sims.main;
    let before = sim.writes().length;
    let res = await patch(`/api/v1/instances/lab/devices/${dev}`, { label: "Rack 7 PDU" });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json(), {
      ok: true,
      instanceId: "lab",
      deviceId: dev,
      settings: { label: "Rack 7 PDU" },
    });
    assert.deepEqual(dataOf(oneSet(sim, before, `/api/dev/${dev}`)), { label: "Rack 7 PDU" });
    assert.equal(await simRead(sim, `/api/dev/${dev}/label`), "Rack 7 PDU");

    before = sim.writes().length;
    res = await patch(`/api/v1/instances/lab/entities/${dev}/breaker0`, { label: "Left bank" });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(dataOf(oneSet(sim, before, `/api/dev/${dev}/entity/breaker0`)), { label: "Left bank" });
    assert.equal(await simRead(sim, `/api/dev/${dev}/entity/breaker0/label`), "Left bank");

    await waitFor(async () => {
      const readings = (await h.api.get("/api/v1/readings?instance=lab")).json<
        { device: string; entityKey: string | null; source: string }[]
      >();
      const renamed =
        readings.some((r) => r.device === "Rack 7 PDU") &&
        readings.some((r) => r.entityKey === "breaker0" && r.source === "Left bank");
      return renamed ? true : undefined;
    }, "the readings to show the new device and entity names");
  });

  it("REST: renames a OneView group on the master", async () => {
    const sim = h.sims.cluster;
    const masterPort = sim.port;
    const before = sim.writes().length;
    const res = await patch("/api/v1/instances/cl/groups/total", { label: "All racks" });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json(), {
      ok: true,
      instanceId: "cl",
      groupKey: "total",
      settings: { label: "All racks" },
    });
    const w = oneSet(sim, before, "/oneview/group/total");
    assert.equal(w.port, masterPort, "written on the master");
    assert.deepEqual(dataOf(w), { label: "All racks" });
    assert.equal(await simRead(sim, "/oneview/group/total/label"), "All racks");
  });

  it("REST: an outlet of a OneView member is written through the member's proxy port", async () => {
    const sim = h.sims.cluster;
    const member = sim.deviceIds()[1]!;
    const before = sim.writes().length;
    const res = await patch(`/api/v1/instances/cl/outlets/${member}/1`, { rebootDelay: 20 });
    assert.equal(res.status, 200, res.text);
    const w = oneSet(sim, before, `/api/dev/${member}/outlet/1`);
    assert.notEqual(w.port, sim.port, "not the master's own port");
    assert.equal(sim.outlet(member, 1).rebootDelay, 20);
  });

  it("REST: unknown outlet, entity or group is 404 with no write", async () => {
    const before = h.sims.main.writes().length;
    for (const path of [
      outletPath(99),
      `/api/v1/instances/lab/entities/${dev}/breaker9`,
      "/api/v1/instances/lab/groups/total",
    ]) {
      const res = await patch(path, { label: "x" });
      assert.equal(res.status, 404, `${path}: ${res.text}`);
    }
    assert.equal(h.sims.main.writes().length, before);
  });

  it("REST: a wrong key is 401 and an instance without ActionsEnabled is 409, with no write", async () => {
    const ro = h.sims.readonly;
    const roDev = ro.deviceIds()[0]!;
    let res = await h.api.send(outletPath(1), {
      method: "PATCH",
      body: { onDelay: 1 },
      headers: { "x-api-key": "wrong" },
    });
    assert.equal(res.status, 401);
    res = await patch(`/api/v1/instances/ro/outlets/${roDev}/0`, { onDelay: 1 });
    assert.equal(res.status, 409, res.text);
    assert.match(res.text, /ActionsEnabled/);
    res = await patch(`/api/v1/instances/ro/devices/${roDev}`, { label: "x" });
    assert.equal(res.status, 409, res.text);
    assert.equal(ro.writes().length, 0, "the read-only PDU got no write");
  });

  const BAD_PAYLOADS: readonly [string, string][] = [
    ["onDelay", "10.5"],
    ["onDelay", "+10"],
    ["offDelay", "1e1"],
    ["offDelay", "010"],
    ["rebootDelay", "3601"],
    ["rebootDelay", "-1"],
    ["onDelay", "ten"],
    ["onDelay", ""],
    ["poaAction", "sometimes"],
    ["label", ""],
    ["label", "y".repeat(33)],
    ["label", "a\u0000b"],
    ["label", "web-\u202e10"],
    ["label", "web\u202901"],
  ];

  for (const [name, payload] of BAD_PAYLOADS) {
    it(`MQTT: ${name}/set ${JSON.stringify(payload)} is refused (400) with no write`, async () => {
      const before = h.sims.main.writes().length;
      const line = await h.publishCommand(`${h.parent}/lab/${dev}/outlets/3/${name}/set`, payload);
      assert.equal(line.status, 400, JSON.stringify(line));
      assert.equal(line.action, "set");
      assert.equal(h.sims.main.writes().length, before, "nothing was written");
    });
  }

  it("MQTT: a setting of an instance without ActionsEnabled is refused (409) with no write", async () => {
    const ro = h.sims.readonly;
    const line = await h.publishCommand(`${h.parent}/ro/${ro.deviceIds()[0]!}/outlets/0/onDelay/set`, "5");
    assert.equal(line.status, 409, JSON.stringify(line));
    assert.equal(ro.writes().length, 0);
  });

  it("Home Assistant gets number, select and text entities only where ActionsEnabled", () => {
    const topics = [...ha.latest("homeassistant/").entries()]
      .filter(([, m]) => m.payload !== "")
      .map(([t]) => t);
    const settingConfigs = (instance: string) =>
      topics.filter((t) => /^homeassistant\/(number|select|text)\//.test(t) && t.includes(`_${instance}/`));
    const roDev = h.sims.readonly.deviceIds()[0]!;
    assert.ok(
      settingConfigs("lab").length >= 4 * OUTLET_SETTINGS.length,
      `every outlet of lab has its settings: ${settingConfigs("lab").length}`,
    );
    assert.deepEqual(settingConfigs("ro"), [], `no settings entities for ro (${roDev})`);
  });
});

describe("settings of a Protected outlet", () => {
  let h: AppHarness<"main">;
  let ha: Recorder;
  let dev: string;
  const GUARDED = 0;
  const FREE = 1;

  before(async () => {
    h = await startAppHarness<"main">({
      sims: { main: { outlets: 3, seed: 11 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 2 }) +
              `\n    Overrides:\n      Outlets:\n        ${JSON.stringify(s.main.deviceIds()[0])}:\n` +
              `          "${GUARDED}": { Protected: true }`,
          ],
        }),
    });
    await h.waitForPoll("lab");
    ha = await h.subscribe(["homeassistant/#"]);
    await h.commandsReady("lab");
    dev = h.sims.main.deviceIds()[0]!;
  });
  after(() => h?.close());

  const patch = (index: number, body: unknown) =>
    h.api.send(`/api/v1/instances/lab/outlets/${dev}/${index}`, { method: "PATCH", body, headers: AUTH });

  const REFUSED: readonly [string, Record<string, unknown>, RegExp][] = [
    [
      "poaAction off with an off delay",
      { poaAction: "off", offDelay: 3600 },
      /refuses poaAction off \(the outlet would stay off after every power restore\)/,
    ],
    ["an on delay", { onDelay: 600 }, /refuses onDelay \(it holds the outlet off before each switch on\)/],
    [
      "a reboot delay",
      { rebootDelay: 0 },
      /refuses rebootDelay \(it sets how long the outlet stays off in a reboot\)/,
    ],
    ["a label with an on delay", { label: "core", onDelay: 5 }, /refuses onDelay/],
  ];

  for (const [what, body, says] of REFUSED) {
    it(`REST: ${what} is 409 protected, nothing sent`, async () => {
      const before = h.sims.main.writes().length;
      const res = await patch(GUARDED, body);
      assert.equal(res.status, 409, res.text);
      const problem = res.json<{ detail: string; type: string }>();
      assert.match(problem.type, /protected$/);
      assert.match(problem.detail, says);
      assert.match(
        problem.detail,
        new RegExp(`outlet ${dev}/${GUARDED} of instance lab was refused: the outlet is protected`),
      );
      assert.match(
        problem.detail,
        /remove Protected from Pdus\.lab\.Overrides to allow it; nothing was sent/,
      );
      assert.equal(h.sims.main.writes().length, before, "nothing was written");
      const audit = await waitFor(
        () => h.audits().findLast((l) => l.source === "rest" && l.target === `outlet ${dev}/${GUARDED}`),
        "the audit line",
      );
      assert.equal(audit.status, 409);
      assert.equal(audit.problem, "protected");
    });
  }

  it("REST: the same write on an outlet that is not protected goes through", async () => {
    const before = h.sims.main.writes().length;
    const res = await patch(FREE, { poaAction: "off", offDelay: 3600 });
    assert.equal(res.status, 200, res.text);
    assert.equal(h.sims.main.writes().length, before + 1);
    assert.equal(h.sims.main.outlet(dev, FREE).poaAction, "off");
  });

  it("REST: a protected outlet takes a label, an off delay and poaAction on or last", async () => {
    for (const body of [
      { label: "core-switch", offDelay: 3600 },
      { poaAction: "last" },
      { poaAction: "on" },
    ]) {
      const before = h.sims.main.writes().length;
      const res = await patch(GUARDED, body);
      assert.equal(res.status, 200, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(h.sims.main.writes().length, before + 1);
    }
    assert.equal(h.sims.main.outlet(dev, GUARDED).offDelay, 3600);
  });

  for (const [name, payload] of [
    ["poaAction", "off"],
    ["onDelay", "5"],
    ["rebootDelay", "30"],
  ] as const) {
    it(`MQTT: ${name}/set ${payload} on the protected outlet is refused (409) and logged, nothing sent`, async () => {
      const before = h.sims.main.writes().length;
      const line = await h.publishCommand(`${h.parent}/lab/${dev}/outlets/${GUARDED}/${name}/set`, payload);
      assert.equal(line.status, 409, JSON.stringify(line));
      assert.equal(line.problem, "protected");
      assert.match(String(line.detail), /the outlet is protected, which refuses/);
      assert.equal(h.sims.main.writes().length, before, "nothing was written");
    });
  }

  it("MQTT: poaAction/set last on the protected outlet is written", async () => {
    const before = h.sims.main.writes().length;
    const line = await h.publishCommand(`${h.parent}/lab/${dev}/outlets/${GUARDED}/poaAction/set`, "last");
    assert.equal(line.status, 200, JSON.stringify(line));
    assert.equal(h.sims.main.writes().length, before + 1);
  });

  it("Home Assistant is not offered what a protected outlet refuses", async () => {
    const configs = () =>
      [...ha.latest("homeassistant/").values()]
        .filter((m) => m.payload !== "")
        .map((m) => JSON.parse(m.payload) as Record<string, unknown>);
    const of = (index: number, name: string) =>
      configs().find((c) => c.command_topic === `${h.parent}/lab/${dev}/outlets/${index}/${name}/set`);
    await waitFor(() => of(FREE, "poaAction"), "the discovery configs");
    assert.deepEqual(of(FREE, "poaAction")?.options, ["on", "off", "last"]);
    assert.ok(of(FREE, "onDelay") && of(FREE, "rebootDelay") && of(FREE, "offDelay"));
    assert.deepEqual(of(GUARDED, "poaAction")?.options, ["on", "last"], "no off on a protected outlet");
    assert.equal(of(GUARDED, "onDelay"), undefined, "no on delay entity");
    assert.equal(of(GUARDED, "rebootDelay"), undefined, "no reboot delay entity");
    assert.ok(of(GUARDED, "offDelay") && of(GUARDED, "label"), "an off delay and the label are offered");
  });
});
