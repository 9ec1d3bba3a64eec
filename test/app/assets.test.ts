/**
 * Assets and feeds through the whole service (docs/assets.md): the real App polling two Geist
 * simulators (feeds A and B) and the SNMP simulator (an APC rPDU2 on feed B), with assets whose
 * cords span them. Checked from outside on every surface: REST `/api/v1/assets` and `/feeds`, the
 * retained `P/$assets/...` topics and the `$assets`/`$feeds` alarm lists, Home Assistant's asset
 * devices against its own rules, and the asset families of `/metrics`. The state, sums and
 * redundancy follow a cord switched off at the PDU and a PDU that stops answering; the feed-loss
 * projection moves a dual-corded asset's current onto the breaker its other cord draws through
 * (`OutletCircuits`) and raises its alarm before anything failed; a live change of the assets
 * applies without a restart.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { diffConfig } from "../../src/config/kubernetes/diff.js";
import { parseConfigText } from "../../src/config/load.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { yamlFragment } from "../../testkit/config-yaml.js";
import { haDeviceProblems, haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import { checkResponses, validateOpenApiDocument } from "../../testkit/openapi-check.js";
import type { Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";

type Sims = "a1" | "b1";

interface RestCord {
  readonly instanceId: string;
  readonly deviceId: string | null;
  readonly index: number;
  readonly status: string;
  readonly problem: string | null;
  readonly detail: string | null;
  readonly power: number | null;
  readonly current: number | null;
  readonly feedsFrom: string | null;
  readonly feed: string | null;
}

interface RestAsset {
  readonly id: string;
  readonly state: string;
  readonly power: number | null;
  readonly current: number | null;
  readonly cordsLive: number;
  readonly cords: number;
  readonly redundancy: string;
  readonly tenant: string | null;
  readonly readings: readonly RestCord[];
}

interface RestFeed {
  readonly id: string;
  readonly power: number | null;
  readonly devices: number;
  readonly ifLost: {
    readonly entities: readonly {
      instanceId: string;
      key: string;
      measured: number;
      added: number;
      projected: number;
      ratio: number | null;
    }[];
    readonly dark: readonly string[];
  };
  readonly alarms: readonly { id: string; severity: string; feed: string; entityInstanceId: string }[];
}

interface RestAlarm {
  readonly instanceId: string;
  readonly id: string;
  readonly source: string;
  readonly severity: string;
  readonly reported: string | null;
}

const SNMP_ENV = { SERVICE_PDU_C1_COMMUNITY: "assets-read", SERVICE_PDU_C1_WRITE_COMMUNITY: "assets-write" };
/** The breaker0 current of b1 the simulator reports (A). */
const BREAKER_AMPS = 1;

describe("assets and feeds through the App, on every surface", () => {
  let snmp: SnmpSimulator;
  let h: AppHarness<Sims>;
  let ha: Recorder;
  let devA: string;
  let devB: string;
  /** The configuration's text with `assets` for Assets (the live change writes another). */
  let yamlWith: (assets: Record<string, unknown>) => string;

  const ASSETS = {
    "db-01": {
      Label: "Database primary",
      Cords: [
        { Instance: "a1", Outlet: 0 },
        { Instance: "b1", Outlet: 0 },
      ],
      Protected: true,
      Tenant: "acme",
      Tags: ["db"],
    },
    "web-01": {
      Cords: [
        { Instance: "a1", Outlet: 1 },
        { Instance: "c1", Outlet: 0 },
      ],
    },
    solo: { Cords: [{ Instance: "a1", Outlet: 2 }] },
    ghost: {
      Cords: [
        { Instance: "a1", Outlet: 3 },
        { Instance: "b1", Outlet: 9 },
      ],
    },
  };

  before(async () => {
    snmp = await startSnmpSimulator({
      profile: "apc-rpdu2",
      port: 0,
      outlets: 4,
      frozen: true,
      community: SNMP_ENV.SERVICE_PDU_C1_COMMUNITY,
      writeCommunity: SNMP_ENV.SERVICE_PDU_C1_WRITE_COMMUNITY,
    });
    h = await startAppHarness<Sims>({
      sims: { a1: { outlets: 4, seed: 11, frozen: true }, b1: { outlets: 4, seed: 12, frozen: true } },
      beforeStart: (s) => {
        // Every outlet the assets name on, whatever the seeds left off.
        for (const sim of [s.a1, s.b1])
          for (let i = 0; i < 4; i++) sim.setOutletState(sim.deviceIds()[0]!, i, "on");
        s.b1.setEntityCurrent(s.b1.deviceIds()[0]!, "breaker0", BREAKER_AMPS);
      },
      env: SNMP_ENV,
      yaml: (s) => {
        // A rating of b1's breaker0 that its current alone keeps under the warning line, and that
        // db-01's current on feed A, moved onto it, puts at 97 %: a projected overload only.
        const moved = s.a1.outlet(s.a1.deviceIds()[0]!, 0).currentA;
        const rating = Math.round(((BREAKER_AMPS + moved) / 0.97) * 1000) / 1000;
        yamlWith = (assets) =>
          appYaml({
            pdus: [
              pduYaml("a1", s.a1, { pollInterval: 1, actionsEnabled: true, more: { Feed: "A" } }),
              pduYaml("b1", s.b1, {
                pollInterval: 1,
                actionsEnabled: true,
                more: {
                  Feed: "B",
                  OutletCircuits: { "0-1": "breaker0", "2-3": "breaker1" },
                  Ratings: { Entities: { breaker0: rating } },
                },
              }),
              yamlFragment(
                {
                  c1: {
                    Driver: "snmp",
                    Connection: { Host: "127.0.0.1", Port: snmp.port, Timeout: 2 },
                    PollInterval: 1,
                    Feed: "B",
                  },
                },
                2,
              ),
            ],
            api: { key: "" },
            extra: [
              yamlFragment({ Feeds: { A: { Label: "Feed A (UPS 1)" }, B: { Label: "Feed B (UPS 2)" } } }, 0),
              yamlFragment({ Assets: assets }, 0),
            ].join("\n"),
          });
        return yamlWith(ASSETS);
      },
    });
    devA = h.sims.a1.deviceIds()[0]!;
    devB = h.sims.b1.deviceIds()[0]!;
    ha = await h.subscribe(["homeassistant/#"]);
    for (const id of ["a1", "b1", "c1"]) await h.waitForPoll(id);
  });
  after(async () => {
    await h?.close();
    await snmp?.close();
  });

  const assets = async (query = ""): Promise<RestAsset[]> => {
    const res = await h.api.get(`/api/v1/assets${query}`);
    assert.equal(res.status, 200, res.text);
    return res.json<RestAsset[]>();
  };
  const asset = async (id: string): Promise<RestAsset> => {
    const res = await h.api.get(`/api/v1/assets/${id}`);
    assert.equal(res.status, 200, res.text);
    return res.json<RestAsset>();
  };
  const feeds = async (): Promise<RestFeed[]> => (await h.api.get("/api/v1/feeds")).json<RestFeed[]>();
  const metrics = async (): Promise<string> => (await h.health.get("/metrics")).text;
  /** The value of the one sample of `name` whose labels include every one of `labels`, or undefined. */
  const sample = (text: string, name: string, labels: Record<string, string>): number | undefined => {
    for (const line of text.split("\n")) {
      if (!line.startsWith(`${name}{`)) continue;
      if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
        return Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return undefined;
  };
  const topic = (id: string, level: string) => `${h.parent}/$assets/${id}/${level}`;

  it("states, sums and redundancy from the cords' readings, with filters", async () => {
    const list = await waitFor(async () => {
      const all = await assets();
      return all.find((a) => a.id === "web-01")?.state === "on" ? all : false;
    }, "every cord read");
    assert.deepEqual(
      list.map((a) => a.id),
      ["db-01", "ghost", "solo", "web-01"],
    );
    const db = list.find((a) => a.id === "db-01")!;
    assert.equal(db.state, "on");
    assert.equal(db.redundancy, "ok");
    assert.equal(db.cordsLive, 2);
    assert.deepEqual(
      db.readings.map((r) => [r.instanceId, r.deviceId, r.index, r.feed, r.feedsFrom]),
      [
        ["a1", devA, 0, "A", "breaker0"], // the Geist unit's parentBreaker
        ["b1", devB, 0, "B", "breaker0"],
      ],
    );
    // The sums are the cords' own readings (REST readings of the same outlets).
    const readings = (await h.api.get("/api/v1/readings")).json<
      { instanceId: string; deviceId: string; outletIndex: number | null; type: string; value: number }[]
    >();
    const reading = (instance: string, device: string, index: number, type: string) =>
      readings.find(
        (r) =>
          r.instanceId === instance && r.deviceId === device && r.outletIndex === index && r.type === type,
      )?.value;
    assert.equal(db.power, reading("a1", devA, 0, "realPower")! + reading("b1", devB, 0, "realPower")!);
    assert.ok(
      Math.abs(db.power - (h.sims.a1.outlet(devA, 0).realPowerW + h.sims.b1.outlet(devB, 0).realPowerW)) <
        0.1,
    );
    const web = list.find((a) => a.id === "web-01")!;
    assert.equal(web.readings[1]!.status, "live", "the SNMP unit's outlet 1 (index 0) is on");
    assert.equal((await asset("solo")).redundancy, "single");
    const ghost = await asset("ghost");
    assert.equal(ghost.state, "unknown");
    assert.equal(ghost.readings[1]!.problem, "unknown-outlet");
    assert.ok(
      h.logs().some((l) => l.level === "warn" && l.asset === "ghost" && l.problem === "unknown-outlet"),
      "the cord that names no outlet is logged",
    );
    assert.deepEqual(
      (await assets("?tenant=acme")).map((a) => a.id),
      ["db-01"],
    );
    assert.deepEqual(
      (await assets("?redundancy=single")).map((a) => a.id),
      ["solo"],
    );
    assert.equal((await h.api.get("/api/v1/assets/nope")).status, 404);
    assert.equal((await h.api.get("/api/v1/assets?colour=red")).status, 400);
  });

  it("retained asset topics and Home Assistant devices that pass its rules", async () => {
    const db = await asset("db-01");
    await h.mqtt.waitFor(topic("db-01", "state"), (m) => m.payload === "on");
    await h.mqtt.waitFor(topic("db-01", "redundancy"), (m) => m.payload === "ok");
    await h.mqtt.waitFor(topic("solo", "redundancy"), (m) => m.payload === "single");
    const power = await h.mqtt.waitFor(topic("db-01", "power"), (m) => m.payload !== "");
    assert.ok(Math.abs(Number(power.payload) - db.power!) < 0.01, `${power.payload} vs ${db.power}`);

    const configs = await waitFor(() => {
      const found = [...ha.latest("homeassistant/").values()].filter(
        (m) => m.topic.includes("/pdu-bridge-assets/") && m.payload !== "",
      );
      // Four entities each; a switch and a button for solo and ghost, a button for protected db-01.
      return found.length === 4 * 4 + 2 + 2 + 1 ? found : false;
    }, "the assets' discovery configs");
    for (const m of configs) {
      const component = m.topic.split("/")[1]!;
      const config = JSON.parse(m.payload) as Record<string, unknown>;
      assert.deepEqual(haDiscoveryProblems(component, config), [], m.topic);
      assert.deepEqual(haDeviceProblems(config.device as Record<string, unknown>), [], m.topic);
    }
    const of = (asset: string, component: string) =>
      configs.filter((m) => m.topic.split("/")[1] === component && m.topic.includes(`/${asset}_`));
    // Protected: no switch (it refuses off), a reboot button; a single-corded asset with control on
    // gets its switch; web-01 has a cord on c1 (control off there): nothing to press.
    assert.equal(of("db-01", "switch").length, 0);
    assert.equal(of("db-01", "button").length, 1);
    const sw = JSON.parse(of("solo", "switch")[0]!.payload) as Record<string, unknown>;
    assert.equal(sw.command_topic, `${h.parent}/$assets/solo/set`);
    assert.equal(of("web-01", "switch").length + of("web-01", "button").length, 0);
    for (const id of ["db-01", "web-01", "solo", "ghost"]) {
      assert.equal(of(id, "sensor").length, 3, id);
      assert.equal(of(id, "binary_sensor").length, 1, id);
    }
  });

  it("the asset families in /metrics", async () => {
    const db = await asset("db-01");
    const text = await metrics();
    assert.ok(Math.abs(sample(text, "pdu_asset_power_watts", { asset: "db-01" })! - db.power!) < 1e-6);
    assert.equal(sample(text, "pdu_asset_cords_live", { asset: "db-01" }), 2);
    assert.equal(sample(text, "pdu_asset_cords", { asset: "ghost" }), 2);
    assert.equal(sample(text, "pdu_asset_redundancy_lost", { asset: "db-01" }), 0);
    assert.equal(sample(text, "pdu_asset_power_watts", { asset: "ghost" }), undefined, "not known: left out");
  });

  it("feed-loss: feed A's currents moved onto feed B's breaker, its alarm raised before anything failed", async () => {
    const feed = await waitFor(async () => {
      const a = (await feeds()).find((f) => f.id === "A");
      return a !== undefined && a.alarms.length > 0 ? a : false;
    }, "the projection of feed A with its alarm");
    const db = await asset("db-01");
    const breaker = feed.ifLost.entities.find((e) => e.instanceId === "b1" && e.key === "breaker0")!;
    assert.equal(breaker.measured, BREAKER_AMPS);
    assert.equal(breaker.added, db.readings[0]!.current, "db-01's current on A, all onto its other cord");
    assert.ok(breaker.ratio! >= 0.95 && breaker.ratio! < 1, String(breaker.ratio));
    assert.ok(
      feed.ifLost.dark.includes("solo") && feed.ifLost.dark.includes("ghost"),
      feed.ifLost.dark.join(),
    );
    assert.ok(!feed.ifLost.dark.includes("db-01"));
    const alarm = feed.alarms[0]!;
    assert.equal(alarm.id, `A/b1/${devB}/entity/breaker0/feed-loss`);
    assert.equal(alarm.severity, "critical");
    assert.equal(alarm.entityInstanceId, "b1");
    const listed = (await h.api.get("/api/v1/alarms?instance=$feeds")).json<RestAlarm[]>();
    assert.deepEqual(
      listed.map((a) => [a.instanceId, a.source, a.id]),
      [["$feeds", "feed-loss", alarm.id]],
    );
    await h.mqtt.waitFor(`${h.parent}/$feeds/alarms`, (m) => m.payload.includes(alarm.id));
    const text = await metrics();
    assert.ok(
      Math.abs(
        sample(text, "pdu_feed_loss_projected_ratio", {
          feed: "A",
          instance: "b1",
          device: devB,
          entity: "breaker0",
        })! - breaker.ratio!,
      ) < 1e-9,
    );
    assert.equal(
      sample(text, "pdu_alarm_active", { instance: "$feeds", source: "feed-loss", feed: "A", pdu: "b1" }),
      1,
    );
  });

  it("a cord switched off at the PDU: redundancy lost within two polls, on every surface, and back", async () => {
    h.sims.b1.setOutletState(devB, 0, "off");
    const lost = await waitFor(async () => {
      const db = await asset("db-01");
      return db.redundancy === "lost" ? db : false;
    }, "db-01's redundancy lost");
    assert.equal(lost.state, "partial");
    assert.equal(lost.cordsLive, 1);
    // ghost's cord that names no outlet is unknown at every poll: its redundancy is lost for good.
    const alarms = (await h.api.get("/api/v1/alarms?instance=$assets")).json<RestAlarm[]>();
    assert.deepEqual(
      alarms.map((a) => [a.id, a.source, a.severity]),
      [
        ["db-01/asset/redundancy", "redundancy", "critical"],
        ["ghost/asset/redundancy", "redundancy", "warning"],
      ],
    );
    assert.match(alarms[0]!.reported ?? "", /cord 2 \(b1 outlet 0\): off/);
    await h.mqtt.waitFor(topic("db-01", "redundancy"), (m) => m.payload === "lost");
    await h.mqtt.waitFor(`${h.parent}/$assets/alarms`, (m) => m.payload.includes("db-01/asset/redundancy"));
    const dbEvent = (type: string) => (m: { payload: string }) =>
      m.payload.includes(`"event_type":"${type}"`) && m.payload.includes('"id":"db-01/asset/redundancy"');
    await h.mqtt.waitFor(`${h.parent}/$assets/events`, dbEvent("raised"));
    const text = await metrics();
    assert.equal(sample(text, "pdu_asset_redundancy_lost", { asset: "db-01" }), 1);
    assert.equal(
      sample(text, "pdu_alarm_active", { instance: "$assets", device: "db-01", source: "redundancy" }),
      1,
    );

    h.sims.b1.setOutletState(devB, 0, "on");
    await waitFor(async () => (await asset("db-01")).redundancy === "ok", "db-01's redundancy whole again");
    await h.mqtt.waitFor(`${h.parent}/$assets/events`, dbEvent("cleared"));
    assert.deepEqual(
      (await h.api.get("/api/v1/alarms?instance=$assets")).json<RestAlarm[]>().map((a) => a.id),
      ["ghost/asset/redundancy"],
    );
  });

  it("a PDU that stops answering: its cords unknown (never zero), redundancy lost, and back", async () => {
    await h.sims.b1.setFault("refuse");
    try {
      const db = await waitFor(async () => {
        const a = await asset("db-01");
        return a.redundancy === "lost" ? a : false;
      }, "db-01's redundancy lost with b1 down");
      assert.equal(db.state, "unknown");
      assert.equal(db.power, null, "a failing PDU never turns into a low sum");
      assert.equal(db.readings[1]!.problem, "offline");
      await h.mqtt.waitFor(topic("db-01", "power"), (m) => m.payload === "");
    } finally {
      await h.sims.b1.setFault(null);
    }
    await waitFor(async () => (await asset("db-01")).redundancy === "ok", "db-01 whole again", 15_000);
  });

  it("a live change of the assets: added, removed, relabelled and cleared without a restart", async () => {
    const { ghost: _gone, ...kept } = ASSETS;
    const next = await parseConfigText(
      yamlWith({
        ...kept,
        solo: { ...kept.solo, Label: "Solo renamed" },
        "new-01": { Cords: [{ Instance: "b1", Outlet: 3 }] },
      }),
      "app-test.yaml",
      SNMP_ENV,
    );
    const diff = diffConfig(h.app.config, next);
    assert.deepEqual(diff.restart, []);
    assert.equal(diff.live.assets, true);
    h.app.applyLive(next, diff.live);
    assert.deepEqual(
      (await assets()).map((a) => a.id),
      ["db-01", "new-01", "solo", "web-01"],
    );
    assert.equal((await asset("new-01")).state, "on");
    await h.mqtt.waitFor(topic("ghost", "state"), (m) => m.payload === "");
    await h.mqtt.waitFor(topic("new-01", "state"), (m) => m.payload === "on");
    await waitFor(() => {
      const ghosts = [...ha.latest("homeassistant/").values()].filter((m) =>
        m.topic.includes("/pdu-bridge-assets/ghost_"),
      );
      return ghosts.length === 6 && ghosts.every((m) => m.payload === "");
    }, "ghost's discovery configs cleared");
    // The relabelled asset's device is discovered again under its new name.
    await waitFor(() => {
      const config = ha
        .latest("homeassistant/")
        .get("homeassistant/sensor/pdu-bridge-assets/solo_state/config");
      return config !== undefined && config.payload.includes('"name":"Solo renamed"');
    }, "solo's discovery configs with its new label");
  });

  it("every answer of the assets, feeds and alarms routes above is what the OpenAPI document declares", async () => {
    const document = (await h.api.get("/openapi/v1.json")).json();
    const validity = await validateOpenApiDocument(document);
    assert.ok(validity.valid, JSON.stringify(validity.errors));
    const { problems, statuses } = checkResponses(document, h.api.responses);
    assert.deepEqual(problems, []);
    for (const s of [
      "GET /api/v1/assets 200",
      "GET /api/v1/assets 400",
      "GET /api/v1/assets/{assetId} 200",
      "GET /api/v1/assets/{assetId} 404",
      "GET /api/v1/feeds 200",
      "GET /api/v1/alarms 200",
    ])
      assert.ok(statuses.has(s), `${s} was checked`);
  });
});
