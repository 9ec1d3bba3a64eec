/**
 * Inferred breaker trips end to end: the whole service polling the Geist simulator over HTTP and
 * the SNMP simulator's APC AP8858 and Raritan PX2 over UDP, every second. A breaker tripped
 * silently (its current and its outlets' fall to 0 while they stay on, nothing reported) raises
 * `breaker-trip-suspected` in the first poll that sees the fall, on MQTT (the retained alarm list,
 * the event, the breaker's load topic that Home Assistant's problem sensor reads), REST, /metrics
 * and the console in Chromium; it clears in the first poll that sees current again. A trip the
 * Raritan reports itself is its `tripped` alarm alone. Outlets switched off at the panel, and a
 * unit whose values go absent, raise nothing.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { SnapshotEvent } from "../../src/bus.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { waitFor } from "../../testkit/wait.js";

const TRIP = "breaker-trip-suspected";
type Json = Record<string, unknown>;

/** The amps of an entity of the snapshot's device (undefined: no such reading). */
function entityAmps(s: Snapshot, deviceId: string, key: string): number | null | undefined {
  const e = s.devices.find((d) => d.id === deviceId)?.entities.find((x) => x.key === key);
  return e?.measurements.find((m) => m.type === "current")?.value;
}

describe("inferred breaker trips on every surface", () => {
  let h: AppHarness<"rack">;
  let apc: SnmpSimulator;
  let px2: SnmpSimulator;
  let browser: BrowserSession | undefined;
  let dev = "";
  /** Every snapshot a poll produced, per instance, in order. */
  const polls = new Map<string, SnapshotEvent[]>();

  before(async () => {
    // Frozen: each outlet's load stays at its base; bank 1 (outlets 1 to 4) carries 4.8 A.
    apc = await startSnmpSimulator({ profile: "apc-rpdu2", port: 0, outlets: 8, frozen: true });
    px2 = await startSnmpSimulator({ profile: "raritan-px2", port: 0, outlets: 8, frozen: true });
    const snmp = (id: string, sim: SnmpSimulator) => [
      `  ${id}:`,
      "    Driver: snmp",
      `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
      "    PollInterval: 1",
    ];
    h = await startAppHarness<"rack">({
      sims: { rack: { outlets: 4, seed: 7 } },
      env: { SERVICE_PDU_APC_COMMUNITY: "public", SERVICE_PDU_PX2_COMMUNITY: "public" },
      yaml: (s) =>
        appYaml({
          pdus: [
            pduYaml("rack", s.rack, { pollInterval: 1 }),
            "    Ratings: { Breakers: 16 }",
            ...snmp("apc", apc),
            ...snmp("px2", px2),
          ],
          api: { key: "" },
        }),
      waitForFirstPolls: true,
    });
    h.app.bus.on("snapshot", (e) => {
      if (!e.fromPoll) return;
      polls.set(e.instanceId, [...(polls.get(e.instanceId) ?? []), e]);
    });
    dev = h.sims.rack.deviceIds()[0]!;
    // Every outlet on and drawing: breaker0 feeds outlets 0 and 1, breaker1 outlets 2 and 3.
    for (const i of [0, 1, 2, 3]) h.sims.rack.setOutletState(dev, i, "on");
    await waitFor(
      () => [0, 1, 2, 3].every((i) => h.sims.rack.outlet(dev, i).currentA > 0),
      "every outlet drawing",
    );
    await waitFor(() => {
      const s = h.app.store.get("rack")?.snapshot;
      return s && s.devices[0]!.outlets.every((o) => o.state === "on" && o.feedsFrom !== undefined);
    }, "a poll with every outlet on");
    if (!chromiumMissing) browser = await openBrowser("trips", { width: 1280, height: 800 });
  });

  after(async () => {
    await browser?.close();
    await h?.close();
    await apc?.close();
    await px2?.close();
  });

  /** The first snapshot of `instance` polled from index `from` on that `pred` accepts. */
  const firstPoll = (instance: string, from: number, pred: (e: SnapshotEvent) => boolean, what: string) =>
    waitFor(() => (polls.get(instance) ?? []).slice(from).find(pred), what, 15_000);
  const mark = (instance: string) => (polls.get(instance) ?? []).length;
  const tripsOf = (e: SnapshotEvent) => e.load.alarms.filter((a) => a.source === TRIP).map((a) => a.id);
  const restAlarms = async () => (await h.api.get("/api/v1/alarms")).json<Json[]>();
  const metrics = async () => (await h.health.get("/metrics")).text;

  it("Geist: a silent trip is raised in the first poll that sees it, on MQTT, REST, /metrics and the console; cleared when current returns", async () => {
    const id = `${dev}/entity/breaker0/${TRIP}`;
    const from = mark("rack");
    h.sims.rack.tripBreaker(dev, "breaker0", true);
    assert.equal(h.sims.rack.outlet(dev, 0).state, "on", "the outlets stay on");
    const fall = await firstPoll(
      "rack",
      from,
      (e) => entityAmps(e.snapshot, dev, "breaker0") === 0,
      "the fall",
    );
    assert.deepEqual(tripsOf(fall), [id], "raised by the poll that saw the fall");
    assert.deepEqual(
      fall.snapshot.devices[0]!.outlets.filter((o) => o.feedsFrom === "breaker0").map((o) => o.state),
      ["on", "on"],
    );
    const point = fall.load.points.find((p) => p.target.kind === "entity" && p.target.key === "breaker0");
    assert.equal(point?.state, "critical", "the breaker reads critical");

    // MQTT: the retained list, the event, the load topic Home Assistant's problem sensor reads.
    const parent = `${h.parent}/rack`;
    await h.mqtt.waitFor(`${parent}/alarms`, (m) => m.payload.includes(id), 10_000);
    const list = JSON.parse(h.mqtt.last(`${parent}/alarms`)!.payload) as Json[];
    const listed = list.find((a) => a.id === id);
    assert.deepEqual(
      [listed?.source, listed?.severity, listed?.target],
      [TRIP, "critical", { kind: "entity", key: "breaker0" }],
    );
    const raised = await h.mqtt.waitFor(
      `${parent}/events`,
      (m) => (JSON.parse(m.payload) as Json).id === id,
      10_000,
    );
    assert.deepEqual(
      [(JSON.parse(raised.payload) as Json).event_type, (JSON.parse(raised.payload) as Json).severity],
      ["raised", "critical"],
    );
    const load = `${parent}/${dev}/entity/breaker0/load`;
    await h.mqtt.waitFor(load, (m) => (JSON.parse(m.payload) as Json).state === "critical", 10_000);
    const late = await h.subscribe([`${parent}/alarms`]);
    assert.match((await late.waitFor(`${parent}/alarms`)).payload, new RegExp(id), "retained");

    // REST and /metrics.
    const rest = (await restAlarms()).find((a) => a.id === id);
    assert.deepEqual([rest?.source, rest?.severity, rest?.stale], [TRIP, "critical", false]);
    assert.match(
      await metrics(),
      new RegExp(
        `^pdu_alarm_active\\{instance="rack",device="${dev}",entity="breaker0",source="${TRIP}",severity="critical"\\} 1$`,
        "m",
      ),
    );

    // The console lists it on the PDU.
    if (browser) {
      const origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
      await browser.page.goto(`${origin}/ui/#/i/rack`);
      await waitFor(
        async () =>
          ((await browser!.page.locator(".pdu-alarms").textContent()) ?? "").includes("trip suspected"),
        "the console's alarm",
        20_000,
      );
      assert.match((await browser.page.locator(".pdu-alarms").textContent()) ?? "", /breaker0/);
    }

    // Current returns: cleared in the first poll that sees it.
    const back = mark("rack");
    h.sims.rack.tripBreaker(dev, "breaker0", false);
    const rise = await firstPoll(
      "rack",
      back,
      (e) => (entityAmps(e.snapshot, dev, "breaker0") ?? 0) > 0,
      "current back",
    );
    assert.deepEqual(tripsOf(rise), [], "cleared by the poll that saw current again");
    await h.mqtt.waitFor(
      `${parent}/events`,
      (m) =>
        (JSON.parse(m.payload) as Json).id === id && (JSON.parse(m.payload) as Json).event_type === "cleared",
      10_000,
    );
    await h.mqtt.waitFor(`${parent}/alarms`, (m) => !m.payload.includes(id), 10_000);
    assert.ok(!(await restAlarms()).some((a) => a.id === id));
    assert.doesNotMatch(await metrics(), new RegExp(`source="${TRIP}"`));
    if (browser) {
      await waitFor(
        async () =>
          !((await browser!.page.locator(".pdu-alarms").textContent()) ?? "").includes("trip suspected"),
        "the console's alarm gone",
        20_000,
      );
    }
  });

  it("APC AP8858 over SNMP: a bank tripped silently raises it in the first poll, cleared at reset", async () => {
    const device = h.app.store.get("apc")!.snapshot!.devices[0]!.id;
    const id = `${device}/entity/bank0/${TRIP}`;
    const from = mark("apc");
    apc.unit.tripBank(1, "silent");
    const fall = await firstPoll(
      "apc",
      from,
      (e) => entityAmps(e.snapshot, device, "bank0") === 0,
      "the fall",
    );
    assert.deepEqual(tripsOf(fall), [id]);
    assert.ok(
      fall.snapshot.devices[0]!.outlets.some((o) => o.feedsFrom === "bank0" && o.state === "on"),
      "outlets of the bank still on",
    );
    await h.mqtt.waitFor(`${h.parent}/apc/alarms`, (m) => m.payload.includes(id), 10_000);
    assert.ok((await restAlarms()).some((a) => a.id === id && a.source === TRIP));
    const back = mark("apc");
    apc.unit.tripBank(1, null);
    const rise = await firstPoll(
      "apc",
      back,
      (e) => (entityAmps(e.snapshot, device, "bank0") ?? 0) > 0,
      "back",
    );
    assert.deepEqual(tripsOf(rise), []);
  });

  it("Raritan PX2: a trip the PDU reports is its `tripped` alarm alone, never doubled", async () => {
    const device = h.app.store.get("px2")!.snapshot!.devices[0]!.id;
    const breakerAlarms = (e: SnapshotEvent) =>
      e.load.alarms
        .filter((a) => a.target.kind === "entity" && a.target.key === "breaker0")
        .map((a) => `${a.source} ${a.reported ?? ""}`);
    const from = mark("px2");
    px2.unit.tripBank(1, "reported");
    const reported = await firstPoll("px2", from, (e) => breakerAlarms(e).length > 0, "the reported trip");
    assert.deepEqual(breakerAlarms(reported), ["tripped open"]);
    assert.equal(entityAmps(reported.snapshot, device, "breaker0"), 0);
    // Two polls more: still the reported trip alone, and no poll since the trip suspected one.
    const later = await firstPoll("px2", mark("px2") + 1, () => true, "two polls more");
    assert.deepEqual(breakerAlarms(later), ["tripped open"]);
    assert.deepEqual(polls.get("px2")!.slice(from).flatMap(tripsOf), []);
    assert.deepEqual(
      (await restAlarms())
        .filter((a) => a.instanceId === "px2" && (a.source === "tripped" || a.source === TRIP))
        .map((a) => [a.id, a.source]),
      [[`${device}/entity/breaker0/tripped`, "tripped"]],
    );
    const back = mark("px2");
    px2.unit.tripBank(1, null);
    await firstPoll("px2", back, (e) => breakerAlarms(e).length === 0, "cleared with the reset");
    assert.deepEqual(polls.get("px2")!.slice(from).flatMap(tripsOf), []);
  });

  it("outlets switched off at the panel: the breaker falls to 0 A and nothing is raised", async () => {
    const from = mark("rack");
    h.sims.rack.setOutletState(dev, 2, "off");
    h.sims.rack.setOutletState(dev, 3, "off");
    const fall = await firstPoll(
      "rack",
      from,
      (e) => entityAmps(e.snapshot, dev, "breaker1") === 0,
      "the fall",
    );
    const after2 = await firstPoll(
      "rack",
      polls.get("rack")!.indexOf(fall) + 2,
      () => true,
      "two polls more",
    );
    const seen = polls.get("rack")!.slice(from, polls.get("rack")!.indexOf(after2) + 1);
    assert.deepEqual(seen.flatMap(tripsOf), [], "no trip suspected");
    h.sims.rack.setOutletState(dev, 2, "on");
    h.sims.rack.setOutletState(dev, 3, "on");
    await firstPoll("rack", from, (e) => (entityAmps(e.snapshot, dev, "breaker1") ?? 0) > 0, "back on");
  });

  it("a unit whose values go absent raises nothing (absent is not 0)", async () => {
    const from = mark("rack");
    for (const t of ["breaker1", 2, 3] as const) h.sims.rack.setMeasurementRaw(dev, t, "current", "n/a");
    const absent = await firstPoll(
      "rack",
      from,
      (e) => entityAmps(e.snapshot, dev, "breaker1") === null,
      "the breaker's current absent",
    );
    const at = polls.get("rack")!.indexOf(absent);
    await firstPoll("rack", at + 2, () => true, "two polls more");
    assert.deepEqual(polls.get("rack")!.slice(from).flatMap(tripsOf), []);
    for (const t of ["breaker1", 2, 3] as const) h.sims.rack.setMeasurementRaw(dev, t, "current", null);
  });
});
