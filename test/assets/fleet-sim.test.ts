/**
 * Assets against simulated ground truth: 200 servers with two power supplies each, over 20
 * simulated PDUs of three kinds (the Geist simulator over HTTP, APC rPDU2 and Raritan PX2 units of
 * the SNMP simulator) on feeds A and B, polled by the bridge's own drivers over real sockets and
 * fed to the assets core (src/assets/) as the assets part feeds it (testkit/load-fleet.ts).
 *
 * - Every asset's state, power and redundancy equal the simulator's truth (`LoadFleet.truth`).
 * - A cord switched off through its PDU, unplugged (a power supply failing) or its PDU stopped
 *   raises `redundancy lost` within two polls of its PDU, and it clears within two polls after.
 * - The feed-loss projection for feed A, made from the polls, is within 5 % (or 0.1 A) of what
 *   feed B's phases, banks, breakers and inlets measure once every PDU of feed A is stopped, and
 *   every entity of it is exact (the drivers' `feedsFrom`); a projected overload raises its alarm
 *   while nothing has failed.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FleetAlarmChange } from "../../src/assets/alarms.js";
import { FeedLossTracker, projectFeedLoss, type FeedProjection } from "../../src/assets/feed-loss.js";
import { DEFAULT_THRESHOLDS } from "../../src/pdu/load.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { FleetPoller, startLoadFleet, type SimulatedFleet } from "../../testkit/load-fleet.js";

/** Watts as the PDUs serve them (whole watts of even shares: exact); amps within their meters' resolution. */
const AMPS_SLACK = 0.1;

function currentOf(s: Snapshot | null, key: string): number | null {
  const m = s?.devices[0]?.entities
    .find((e) => e.key === key)
    ?.measurements.find((x) => x.type === "current");
  return m?.value ?? null;
}

describe("200 dual-corded assets over 20 simulated PDUs of three kinds", { timeout: 600_000 }, () => {
  let sim: SimulatedFleet;
  let poller: FleetPoller;

  before(async () => {
    sim = await startLoadFleet({ pdus: 20, assets: 200 });
    poller = new FleetPoller(sim);
    await poller.round();
  });
  after(async () => {
    await poller?.close();
    await sim?.close();
  });

  /** The book's asset against the simulator's truth of the load. */
  function assertExact(id: string): void {
    const state = poller.book.get(id)!;
    const truth = sim.fleet.load(id);
    const want = truth.cordsLive === 2 ? "on" : truth.cordsLive === 0 ? "off" : "partial";
    assert.equal(state.state, want, `${id}: state`);
    assert.equal(state.cordsLive, truth.cordsLive, `${id}: cords live`);
    assert.equal(state.power, truth.watts, `${id}: power`);
    assert.ok(
      Math.abs(state.current! - truth.amps) <= AMPS_SLACK,
      `${id}: current ${state.current} ≠ ${truth.amps}`,
    );
  }

  /** Polls one PDU until the update's alarm change for `asset` is `change`: at most `polls` polls. */
  async function pollsUntil(
    pdu: string,
    asset: string,
    change: FleetAlarmChange["change"],
    polls = 2,
  ): Promise<number> {
    for (let n = 1; n <= polls; n++) {
      const update = await poller.poll(pdu);
      if (update.alarmChanges.some((c) => c.change === change && c.alarm.deviceId === asset)) return n;
    }
    assert.fail(`${asset}: redundancy alarm not ${change} within ${polls} polls of ${pdu}`);
  }

  const cordTarget = (pdu: string, outlet: number) => {
    const snapshot = poller.reading(pdu).snapshot!;
    return { deviceId: snapshot.devices[0]!.id, index: outlet, route: null };
  };

  it("has every asset's state, power, cords and redundancy as the simulator has them", () => {
    assert.equal(sim.pdus.length, 20);
    assert.deepEqual([...new Set(sim.pdus.map((p) => p.kind))].sort(), ["apc-rpdu2", "geist", "raritan-px2"]);
    for (const a of sim.assets) {
      assertExact(a.id);
      const state = poller.book.get(a.id)!;
      assert.equal(state.state, "on");
      assert.equal(state.redundancy, "ok");
      assert.deepEqual(
        state.readings.map((r) => r.feed),
        ["A", "B"],
      );
      assert.ok(
        state.readings.every((r) => r.feedsFrom !== null),
        `${a.id}: each cord's entity known`,
      );
    }
    assert.equal(poller.book.alarms().length, 0);
  });

  it("raises redundancy lost within two polls of a cord switched off through its PDU, and clears it after", async () => {
    const asset = sim.assets[0]!;
    const cord = asset.cords[1]!;
    await poller.driver(cord.pdu).controlOutlet(cordTarget(cord.pdu, cord.outlet), "off");
    const raised = await pollsUntil(cord.pdu, asset.id, "raised");
    assert.ok(raised <= 2);
    await poller.poll(asset.cords[0]!.pdu);
    const state = poller.book.get(asset.id)!;
    assert.equal(state.redundancy, "lost");
    assert.equal(sim.fleet.load(asset.id).cordsLive, 1);
    assertExact(asset.id);
    const alarm = poller.book.alarms().find((a) => a.deviceId === asset.id);
    assert.match(alarm?.reported ?? "", /off/);
    assert.deepEqual(
      sim.fleet.journal(cord.pdu).map((w) => [w.outlet, w.action]),
      [[cord.outlet, "off"]],
    );

    await poller.driver(cord.pdu).controlOutlet(cordTarget(cord.pdu, cord.outlet), "on");
    assert.ok((await pollsUntil(cord.pdu, asset.id, "cleared")) <= 2);
    await poller.poll(asset.cords[0]!.pdu);
    assert.equal(poller.book.get(asset.id)!.redundancy, "ok");
    assertExact(asset.id);
  });

  it("raises it within two polls of a power supply failing (its outlet on, drawing nothing), and clears it after", async () => {
    // The 5 % rule reads currents from 0.5 A of asset current on: a server of 120 W or more.
    const asset = sim.assets.find((a) => a.watts >= 120 && a !== sim.assets[0])!;
    const a = asset.cords[0]!;
    const b = asset.cords[1]!;
    sim.fleet.setPlugged(asset.id, 0, false);
    await poller.poll(b.pdu);
    assert.ok((await pollsUntil(a.pdu, asset.id, "raised")) <= 2);
    const state = poller.book.get(asset.id)!;
    assert.equal(state.readings[0]!.status, "live", "the outlet is on");
    assert.equal(state.redundancy, "lost");
    assert.equal(state.power, sim.fleet.load(asset.id).watts, "the other cord carries it all");
    sim.fleet.setPlugged(asset.id, 0, true);
    await poller.poll(b.pdu);
    assert.ok((await pollsUntil(a.pdu, asset.id, "cleared")) <= 2);
    assertExact(asset.id);
  });

  it("raises it within two polls for every asset on a PDU that stopped, and clears them after it is back", async () => {
    const pdu = sim.pdus.find((p) => p.kind === "raritan-px2" && p.feed === "A")!;
    const on = sim.assets.filter((a) => a.cords.some((c) => c.pdu === pdu.name));
    assert.equal(on.length, 20);
    await sim.fleet.stopPdu(pdu.name);
    const raised = new Set<string>();
    for (let n = 1; n <= 2 && raised.size < on.length; n++)
      for (const c of (await poller.poll(pdu.name)).alarmChanges)
        if (c.change === "raised") raised.add(c.alarm.deviceId);
    assert.deepEqual([...raised].sort(), on.map((a) => a.id).sort());
    const others = [...new Set(on.map((a) => a.cords.find((c) => c.pdu !== pdu.name)!.pdu))];
    await poller.round(others);
    for (const a of on) {
      const state = poller.book.get(a.id)!;
      assert.equal(state.state, "unknown", `${a.id}: a cord's PDU is offline`);
      assert.equal(state.redundancy, "lost");
      assert.equal(sim.fleet.load(a.id).cordsLive, 1);
      const other = state.readings.find((r) => r.instance !== pdu.name)!;
      assert.equal(other.power, sim.fleet.load(a.id).watts, `${a.id}: the other cord carries it all`);
    }
    await sim.fleet.startPdu(pdu.name);
    const cleared = new Set<string>();
    for (let n = 1; n <= 2 && cleared.size < on.length; n++)
      for (const c of (await poller.poll(pdu.name)).alarmChanges)
        if (c.change === "cleared") cleared.add(c.alarm.deviceId);
    assert.equal(cleared.size, on.length);
    await poller.round(others);
    for (const a of on) assertExact(a.id);
    assert.equal(poller.book.alarms().length, 0);
  });

  describe("the feed-loss projection", () => {
    let projection: FeedProjection;
    const tracker = new FeedLossTracker(DEFAULT_THRESHOLDS);
    const feedB = () => sim.pdus.filter((p) => p.feed === "B").map((p) => p.name);

    it("raises a projected overload of feed B's entities while nothing has failed", async () => {
      // Rate one breaker of a feed-B PDU at what it would carry without feed A, plus 2 %.
      await poller.round();
      const first = projectFeedLoss(poller.book.model, poller.book.states(), poller.book.readings());
      const target = sim.pdus.find((p) => p.feed === "B" && p.kind === "geist")!;
      const breaker = first[0]!.entities.find((e) => e.instance === target.name && e.key === "breaker0")!;
      const rating = Math.round((breaker.projected / 0.98) * 10) / 10;
      poller.rate(target.name, { Entities: { breaker0: rating } });
      await poller.round();
      projection = projectFeedLoss(poller.book.model, poller.book.states(), poller.book.readings())[0]!;
      assert.equal(projection.feed, "A");
      const { changes } = tracker.assess([projection], Date.now());
      const raised = changes.filter((c) => c.change === "raised").map((c) => c.alarm);
      const ours = raised.find(
        (a) => a.instanceId === target.name && a.target.kind === "entity" && a.target.key === "breaker0",
      );
      assert.ok(ours, JSON.stringify(raised));
      assert.equal(ours.severity, "critical");
      assert.equal(ours.feed, "A");
      // Raised for exactly the entities projected at or over the warning line.
      const over = projection.entities
        .filter((e) => e.ratio !== null && e.ratio * 100 >= DEFAULT_THRESHOLDS.warnPercent)
        .map((e) => `${e.instance}/${e.key}`);
      const keyOf = (a: (typeof raised)[number]) =>
        `${a.instanceId}/${a.target.kind === "entity" ? a.target.key : ""}`;
      assert.deepEqual(raised.map(keyOf).sort(), over.sort());
      // Nothing failed: every PDU powered, nothing over a line now, the breaker well under its rating.
      assert.ok(sim.fleet.truth().pdus.every((p) => p.powered));
      for (const p of sim.pdus)
        for (const point of poller.reading(p.name).load!.points)
          assert.equal(point.loadState, "normal", `${p.name} ${point.name} now at ${point.ratio}`);
      const point = poller
        .reading(target.name)
        .load!.points.find((p) => p.target.kind === "entity" && p.target.key === "breaker0")!;
      assert.equal(point.rating, rating);
    });

    it("projects within 5 % (or 0.1 A) what feed B measures once every PDU of feed A is stopped", async () => {
      assert.deepEqual(projection.dark, [], "every asset has a cord on feed B");
      assert.deepEqual(projection.unplaced, [], "each share placed on its entities");
      assert.deepEqual(projection.unseen, []);
      const entities = projection.entities.filter(
        (e) => currentOf(poller.reading(e.instance).snapshot, e.key) !== null,
      );
      assert.ok(entities.length >= 10 * 3, `entities with a current: ${entities.length}`);
      assert.ok(
        entities.every((e) => e.exact),
        "every entity exact: each outlet says what it draws through",
      );
      assert.ok(entities.every((e) => feedB().includes(e.instance)));

      await sim.fleet.stopFeed("A");
      await poller.round(feedB());
      const off = new Set<string>();
      for (const a of sim.assets) {
        const truth = sim.fleet.load(a.id);
        assert.equal(truth.cordsLive, 1, `${a.id} runs on feed B alone`);
        assert.equal(truth.cords[1]!.live, true);
      }
      const misses: string[] = [];
      for (const e of entities) {
        const measured = currentOf(poller.reading(e.instance).snapshot, e.key)!;
        const slack = Math.max(0.05 * e.projected, 0.1);
        if (Math.abs(measured - e.projected) > slack)
          misses.push(
            `${e.instance} ${e.key}: projected ${e.projected.toFixed(3)} A, measured ${measured} A`,
          );
        if (e.added > 0) off.add(e.instance);
      }
      assert.deepEqual(misses, []);
      assert.equal(off.size, 10, "every feed-B PDU took a share");
    });

    it("loses redundancy of every asset within two polls of feed A's PDUs, and clears it when the feed is back", async () => {
      const feedA = sim.pdus.filter((p) => p.feed === "A").map((p) => p.name);
      const raised = new Set<string>();
      for (let n = 1; n <= 2 && raised.size < sim.assets.length; n++)
        for (const u of await poller.round(feedA))
          for (const c of u.alarmChanges) if (c.change === "raised") raised.add(c.alarm.deviceId);
      assert.equal(raised.size, sim.assets.length);
      await sim.fleet.startFeed("A");
      const cleared = new Set<string>();
      for (let n = 1; n <= 2 && cleared.size < sim.assets.length; n++)
        for (const u of await poller.round(feedA))
          for (const c of u.alarmChanges) if (c.change === "cleared") cleared.add(c.alarm.deviceId);
      assert.equal(cleared.size, sim.assets.length);
      await poller.round(feedB());
      for (const a of sim.assets) assertExact(a.id);
    });
  });
});
