/**
 * Loads and feeds in the simulators (src/simulator/fleet.ts): a Geist simulator on feed A and an
 * APC rPDU2 and a Raritan PX2 unit of the SNMP simulator on feed B, read and switched by the
 * bridge's own drivers over real sockets. A load shares its power evenly over its live cords as
 * each PDU serves it; switching a cord off, unplugging it, rebooting its outlet or stopping its PDU
 * or its feed moves its share to the other cords; a start draws its start-up power for its start
 * seconds; a stopped PDU answers nothing; the write journal lists what each PDU executed.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { PduDriver } from "../../src/pdu/driver.js";
import { createDriver } from "../../src/pdu/drivers.js";
import { isPduError } from "../../src/pdu/errors.js";
import type { Outlet, Snapshot } from "../../src/pdu/model.js";
import { LoadFleet, startSimulator, type Simulator } from "../../src/simulator/index.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { geistInstance } from "../../testkit/load-fleet.js";
import { snmpInstance } from "../../testkit/snmpsim.js";
import { waitFor } from "../../testkit/wait.js";

const value = (o: Outlet | undefined, type: string): number | null | undefined =>
  o?.measurements.find((m) => m.type === type)?.value;

const entityCurrent = (s: Snapshot, key: string): number | null | undefined =>
  s.devices[0]?.entities.find((e) => e.key === key)?.measurements.find((m) => m.type === "current")?.value;

describe("loads and feeds in the simulators", () => {
  const fleet = new LoadFleet({ frozen: true });
  let geist: Simulator;
  let apc: SnmpSimulator;
  let raritan: SnmpSimulator;
  const drivers: Record<"g" | "a" | "r", PduDriver> = {} as Record<"g" | "a" | "r", PduDriver>;
  let gDevice: string;
  const ids: Record<string, string> = {};

  const poll = async (pdu: "g" | "a" | "r"): Promise<Snapshot> => drivers[pdu].poll();
  const outletOf = async (pdu: "g" | "a" | "r", index: number): Promise<Outlet | undefined> =>
    (await poll(pdu)).devices[0]?.outlets.find((o) => o.index === index);
  const control = (pdu: "g" | "a" | "r", index: number, action: "on" | "off" | "reboot") =>
    drivers[pdu].controlOutlet({ deviceId: ids[pdu]!, index, route: null }, action);

  before(async () => {
    geist = await startSimulator({
      outlets: 4,
      frozen: true,
      voltage: 230,
      rebootMs: 600,
      fleet: { fleet, name: "g", feed: "A" },
    });
    gDevice = geist.deviceIds()[0]!;
    const snmp = (profile: "apc-rpdu2" | "raritan-px2", name: string) =>
      startSnmpSimulator({
        profile,
        outlets: 4,
        frozen: true,
        refreshMs: 250,
        fleet: { fleet, name, feed: "B" },
      });
    apc = await snmp("apc-rpdu2", "a");
    raritan = await snmp("raritan-px2", "r");
    for (let k = 0; k < 4; k++) geist.setOutletState(gDevice, k, "on");
    for (let k = 1; k <= 4; k++) {
      apc.unit.switch(k, "on");
      raritan.unit.switch(k, "on");
    }
    fleet.addLoad({
      id: "srv",
      watts: 460,
      startSeconds: 3,
      cords: [
        { pdu: "g", device: gDevice, outlet: 0 },
        { pdu: "a", outlet: 0 },
      ],
    });
    fleet.addLoad({
      id: "big",
      watts: 920,
      cords: [
        { pdu: "g", device: gDevice, outlet: 1 },
        { pdu: "r", outlet: 1 },
      ],
    });
    drivers.g = createDriver(geistInstance("g", geist.port, 2));
    const inst = (id: string, sim: SnmpSimulator, profile: "apc-rpdu2" | "raritan-px2") => ({
      ...snmpInstance(
        id,
        sim.port,
        { Profile: profile, Community: sim.community, WriteCommunity: sim.writeCommunity },
        1,
      ),
      RelayProtection: 0,
    });
    drivers.a = createDriver(inst("a", apc, "apc-rpdu2"));
    drivers.r = createDriver(inst("r", raritan, "raritan-px2"));
    for (const k of ["g", "a", "r"] as const) ids[k] = (await poll(k)).devices[0]!.id;
  });

  after(async () => {
    await Promise.all(Object.values(drivers).map((d) => d.close()));
    await Promise.all([geist.close(), apc.close(), raritan.close()]);
  });

  it("shares a load's power evenly over its live cords, as each PDU serves it", async () => {
    const srv = fleet.load("srv");
    assert.equal(srv.cordsLive, 2);
    assert.deepEqual(
      srv.cords.map((c) => c.watts),
      [230, 230],
    );
    assert.equal(srv.watts, 460);
    assert.equal(value(await outletOf("g", 0), "realPower"), 230);
    assert.equal(value(await outletOf("a", 0), "realPower"), 230);
    assert.equal(value(await outletOf("r", 1), "realPower"), 460);
    assert.equal(value(await outletOf("g", 1), "realPower"), 460);
    // An outlet no load is plugged into draws nothing, on.
    const empty = await outletOf("a", 2);
    assert.equal(empty?.state, "on");
    assert.equal(value(empty, "realPower"), 0);
    // Amps: watts over volts and power factor, within each meter's resolution.
    const amps = 230 / (230 * 0.95);
    assert.ok(Math.abs(srv.cords[1]!.amps - amps) < 1e-9);
    assert.ok(Math.abs(value(await outletOf("a", 0), "current")! - amps) <= 0.05);
    // The entities the outlets draw through sum them: APC bank 1 (outlets 1-2), Raritan breaker 1.
    const a = await poll("a");
    assert.ok(Math.abs(entityCurrent(a, "bank0")! - amps) <= 0.05, "APC bank0 carries srv");
    assert.equal(entityCurrent(a, "bank1"), 0);
    const r = await poll("r");
    assert.ok(Math.abs(entityCurrent(r, "breaker0")! - 2 * amps) <= 0.005, "Raritan breaker0 carries big");
    const truth = fleet.truth();
    assert.deepEqual(
      truth.pdus.map((p) => [p.name, p.feed, p.powered]),
      [
        ["g", "A", true],
        ["a", "B", true],
        ["r", "B", true],
      ],
    );
  });

  it("moves a cord's share to the other cord when the PDU switches it off, and back when on", async () => {
    await control("a", 0, "off");
    await waitFor(() => fleet.load("srv").cordsLive === 1, "srv on one cord");
    assert.equal((await outletOf("a", 0))?.state, "off");
    assert.equal(value(await outletOf("a", 0), "realPower"), 0);
    assert.equal(value(await outletOf("g", 0), "realPower"), 460);
    await control("a", 0, "on");
    await waitFor(() => fleet.load("srv").cordsLive === 2, "srv on two cords");
    assert.equal(value(await outletOf("g", 0), "realPower"), 230);
    assert.equal(fleet.load("srv").starting, false, "a cord coming back while another is live is no start");
    const journal = fleet.journal("a").map((w) => [w.outlet, w.action]);
    assert.deepEqual(journal, [
      [0, "off"],
      [0, "on"],
    ]);
  });

  it("moves an unplugged cord's share (a power supply failing): its outlet stays on and draws nothing", async () => {
    fleet.setPlugged("srv", 1, false);
    const a = await outletOf("a", 0);
    assert.equal(a?.state, "on");
    assert.equal(value(a, "realPower"), 0);
    assert.equal(value(a, "current"), 0);
    assert.equal(value(await outletOf("g", 0), "realPower"), 460);
    const truth = fleet.load("srv");
    assert.deepEqual(
      truth.cords.map((c) => [c.plugged, c.relay, c.live]),
      [
        [true, true, true],
        [false, true, false],
      ],
    );
    fleet.setPlugged("srv", 1, true);
    assert.equal(value(await outletOf("a", 0), "realPower"), 230);
  });

  it("carries the load on the other cord through an outlet's reboot, shared again after", async () => {
    const before = fleet.journal("g").length;
    await control("g", 0, "reboot");
    await waitFor(() => fleet.load("srv").cordsLive === 1, "the rebooting cord is dead");
    assert.equal(value(await outletOf("a", 0), "realPower"), 460);
    await waitFor(() => fleet.load("srv").cordsLive === 2, "the relay is back on after the reboot");
    assert.equal(value(await outletOf("a", 0), "realPower"), 230);
    assert.deepEqual(
      fleet
        .journal("g")
        .slice(before)
        .map((w) => [w.outlet, w.action]),
      [[0, "reboot"]],
    );
  });

  it("stops a PDU: it answers nothing, its cords' shares move; started, it answers again", async () => {
    await fleet.stopPdu("a");
    await assert.rejects(poll("a"), (e) => isPduError(e));
    assert.equal(value(await outletOf("g", 0), "realPower"), 460);
    assert.equal(fleet.truth().pdus.find((p) => p.name === "a")?.powered, false);
    await fleet.startPdu("a");
    assert.equal(value(await outletOf("a", 0), "realPower"), 230);
    assert.equal(value(await outletOf("g", 0), "realPower"), 230);
  });

  it("stops a feed: every PDU on it stops answering and its loads run on the other feed", async () => {
    await fleet.stopFeed("B");
    await assert.rejects(poll("a"), (e) => isPduError(e));
    await assert.rejects(poll("r"), (e) => isPduError(e));
    assert.equal(value(await outletOf("g", 0), "realPower"), 460);
    assert.equal(value(await outletOf("g", 1), "realPower"), 920);
    assert.deepEqual(
      fleet.truth().pdus.map((p) => p.powered),
      [true, false, false],
    );
    await fleet.startFeed("B");
    assert.equal(value(await outletOf("r", 1), "realPower"), 460);
    assert.equal(value(await outletOf("g", 1), "realPower"), 460);
  });

  it("draws the start-up power for the load's start seconds when a cord comes live on a dark load", async () => {
    const since = fleet.clock();
    await control("a", 0, "off");
    await control("g", 0, "off");
    await waitFor(() => fleet.load("srv").cordsLive === 0, "srv dark");
    assert.equal(value(await outletOf("g", 0), "realPower"), 0);
    await control("g", 0, "on");
    await waitFor(() => fleet.load("srv").cordsLive === 1, "srv started");
    assert.equal(fleet.load("srv").starting, true);
    assert.equal(fleet.startingAt(), 1);
    assert.equal(value(await outletOf("g", 0), "realPower"), 920, "twice its power while it starts");
    await waitFor(() => !fleet.load("srv").starting, "the start is over", 10_000);
    assert.equal(value(await outletOf("g", 0), "realPower"), 460);
    const starts = fleet.starts(since);
    assert.deepEqual(
      starts.map((s) => s.load),
      ["srv"],
    );
    assert.equal(starts[0]!.until - starts[0]!.at, 3000);
    assert.equal(fleet.maxConcurrentStarts(since), 1);
    await control("a", 0, "on");
    await waitFor(() => fleet.load("srv").cordsLive === 2, "srv on two cords again");
  });

  it("counts each outlet's energy as its share of the load's, none while its PDU is stopped", async () => {
    const gWh = () => geist.outlet(gDevice, 1).energyKwh * 1000;
    const rWh = () => {
      raritan.unit.tick();
      return raritan.unit.outlets[1]!.energyWh;
    };
    const l0 = fleet.load("big").energyWh;
    const [g0, r0] = [gWh(), rWh()];
    await waitFor(() => fleet.load("big").energyWh > l0 + 0.05, "energy drawn");
    const l1 = fleet.load("big").energyWh;
    const [g1, r1] = [gWh(), rWh()];
    assert.ok(Math.abs(g1 - g0 + (r1 - r0) - (l1 - l0)) < 0.01, "the outlets' counts add up to the load's");
    assert.ok(Math.abs(g1 - g0 - (r1 - r0)) < 0.01, "shared evenly");
    await fleet.stopPdu("g");
    const g2 = gWh();
    await waitFor(() => fleet.load("big").energyWh > l1 + 0.05, "energy drawn on one cord");
    assert.ok(Math.abs(gWh() - g2) < 1e-9, "no energy through a stopped PDU");
    await fleet.startPdu("g");
    assert.ok(gWh() >= g2);
    assert.ok(rWh() > r1);
  });
});
