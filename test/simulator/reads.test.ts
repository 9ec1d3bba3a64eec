import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { compareKeys } from "../../src/pdu/model.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import type { WireApi, WireDevice, WireMeasurement } from "../../src/simulator/tree.js";
import { getJson, request } from "../../testkit/sim-http.js";

const INT_KEY = /^(0|[1-9]\d*)$/;
const NUMBER = /^-?\d+(\.\d+)?$/;

function valueOf(map: Record<string, WireMeasurement> | undefined, type: string): string | undefined {
  return Object.values(map ?? {}).find((m) => m.type === type)?.value;
}

async function api(sim: Simulator, url = sim.url): Promise<WireApi> {
  const env = await getJson(`${url}/api`);
  assert.equal(env.retCode, 0);
  return env.data as WireApi;
}

function outletValue(tree: WireApi, deviceId: string, index: number, type: string): string | undefined {
  return valueOf(tree.dev[deviceId]?.outlet[String(index)]?.measurement, type);
}

describe("simulator reads: single unit", () => {
  let now = 1_700_000_000_000;
  let sim: Simulator;
  let ids: string[];
  before(async () => {
    sim = await startSimulator({ seed: 7, devices: 2, outlets: 12, clock: () => now });
    ids = sim.deviceIds();
  });
  after(() => sim.close());

  it("reports it is not a OneView master, and has no /oneview", async () => {
    const enabled = await getJson(`${sim.url}/api/conf/oneview/enabled`);
    assert.deepEqual(enabled, { retCode: 0, retMsg: "OK", data: false });
    assert.equal((await getJson(`${sim.url}/oneview`)).retCode, 3001);
  });

  it("serves the /api tree in the protocol's shapes", async () => {
    const tree = await api(sim);
    for (const key of [
      "label",
      "name",
      "oem",
      "model",
      "modelNumber",
      "serialNumber",
      "version",
      "appVersion",
    ])
      assert.equal(typeof tree.sys[key], "string", `sys.${key}`);
    const eth = (
      tree.conf.network as { ethernet: { macAddr: string; address: Record<string, { address: string }> } }
    ).ethernet;
    assert.match(eth.macAddr, /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    assert.equal(typeof eth.address["1"]?.address, "string");
    assert.ok(tree.auth && tree.alarm);

    assert.deepEqual(Object.keys(tree.dev), ids);
    assert.equal(ids.length, 2);
    for (const id of ids) {
      assert.match(id, /^[0-9A-F]{16}$/);
      const dev = tree.dev[id] as WireDevice;
      assert.match(String(dev.lifetimeEnergy), /^\d+$/);
      assert.deepEqual(dev.conf, { outletControlEnabled: true });
      const layout = dev.layout as Record<string, string[]>;
      assert.ok(Object.keys(layout).every((k) => INT_KEY.test(k)));
      assert.equal(layout["0"]?.[0], "entity/phase0");
      assert.deepEqual(Object.keys(dev.entity).sort(), ["breaker0", "breaker1", "phase0", "total0"]);
      assert.deepEqual(dev.entity.breaker0?.point, { lossOfLoadDetected: { value: false } });
      assert.ok(valueOf(dev.entity.phase0?.measurement, "voltage"));
      assert.ok(valueOf(dev.entity.phase0?.measurement, "current"));
      assert.ok(valueOf(dev.entity.total0?.measurement, "realPower"));
      assert.match(valueOf(dev.entity.total0?.measurement, "energy") ?? "", /^\d+\.\d{3}$/);
      assert.ok(valueOf(dev.entity.breaker1?.measurement, "current"));

      const keys = Object.keys(dev.outlet);
      assert.deepEqual(
        [...keys].sort(compareKeys),
        Array.from({ length: 12 }, (_, i) => String(i)),
      );
      for (const [key, outlet] of Object.entries(dev.outlet)) {
        assert.equal(outlet.name, `Outlet ${Number(key) + 1}`);
        assert.ok(outlet.state === "on" || outlet.state === "off");
        for (const f of ["onDelay", "offDelay", "rebootDelay"]) assert.ok(Number.isInteger(outlet[f]), f);
        assert.ok(["on", "off", "last"].includes(String(outlet.poaAction)));
        const types = Object.values(outlet.measurement).map((m) => m.type);
        for (const t of ["current", "realPower", "apparentPower", "powerFactor", "energy", "voltage"])
          assert.ok(types.includes(t), `outlet ${key} has ${t}`);
        for (const m of Object.values(outlet.measurement)) {
          assert.equal(typeof m.value, "string");
          assert.match(m.value, NUMBER);
          assert.equal(typeof m.units, "string");
        }
      }
    }
  });

  it("serves any sub-path as that sub-tree, and 3001 for unknown paths", async () => {
    const [id] = ids;
    assert.deepEqual((await getJson(`${sim.url}/api/dev/${id}/outlet/3/name`)).data, "Outlet 4");
    assert.equal((await getJson(`${sim.url}/api/sys/oem`)).data, "GEI");
    const outlet = (await getJson(`${sim.url}/api/dev/${id}/outlet/10`)).data as { name: string };
    assert.equal(outlet.name, "Outlet 11");
    const missing = await request(`${sim.url}/api/dev/NOPE`);
    assert.equal(missing.status, 200);
    assert.equal((JSON.parse(missing.text) as { retCode: number }).retCode, 3001);
    assert.equal((await request(`${sim.url}/elsewhere`)).status, 404);
  });

  it("an off outlet reads 0 W and 0 A", async () => {
    const id = ids[0] ?? "";
    sim.setOutletState(id, 0, "on");
    let tree = await api(sim);
    assert.notEqual(outletValue(tree, id, 0, "realPower"), "0");
    sim.setOutletState(id, 0, "off");
    tree = await api(sim);
    assert.equal(tree.dev[id]?.outlet["0"]?.state, "off");
    assert.equal(outletValue(tree, id, 0, "realPower"), "0");
    assert.equal(outletValue(tree, id, 0, "apparentPower"), "0");
    assert.equal(outletValue(tree, id, 0, "current"), "0.00");
    assert.equal(sim.outlet(id, 0).realPowerW, 0);
  });

  it("energy only rises while on, stays put while off, and matches the accessor", async () => {
    const id = ids[1] ?? "";
    sim.setOutletState(id, 2, "on");
    const readings: number[] = [];
    const read = async (): Promise<number> => {
      const raw = outletValue(await api(sim), id, 2, "energy") ?? "";
      assert.equal(raw, sim.outlet(id, 2).energyKwh.toFixed(3));
      readings.push(Number(raw));
      return Number(raw);
    };
    const start = await read();
    const watts = sim.outlet(id, 2).realPowerW;
    now += 3_600_000;
    const hourLater = await read();
    // between 0.8 and 1.2 times the power at the start, for one hour (the waveform wanders by at most 12 %)
    assert.ok(hourLater - start > (watts * 0.8) / 1000 && hourLater - start < (watts * 1.2) / 1000);
    sim.setOutletState(id, 2, "off");
    now += 3_600_000;
    assert.equal(await read(), hourLater);
    sim.setOutletState(id, 2, "on");
    for (let k = 0; k < 20; k++) {
      now += 7_919;
      await read();
    }
    for (let k = 1; k < readings.length; k++) assert.ok((readings[k] ?? 0) >= (readings[k - 1] ?? 0));
    assert.ok((readings.at(-1) ?? 0) > hourLater);
  });

  it("device totals never decrease, even when an outlet's energy is reset", async () => {
    const id = ids[0] ?? "";
    const total = async (): Promise<number> =>
      Number(valueOf((await api(sim)).dev[id]?.entity.total0?.measurement, "energy"));
    const before = await total();
    sim.setOutletState(id, 1, "on");
    now += 600_000;
    const mid = await total();
    assert.ok(mid > before);
    sim.setEnergy(id, 1, 0);
    assert.ok((await total()) >= mid);
  });

  it("a measurement can be made non-numeric and restored", async () => {
    const id = ids[0] ?? "";
    sim.setMeasurementRaw(id, 5, "powerFactor", "n/a");
    sim.setMeasurementRaw(id, "phase0", "voltage", "");
    let tree = await api(sim);
    assert.equal(outletValue(tree, id, 5, "powerFactor"), "n/a");
    assert.equal(valueOf(tree.dev[id]?.entity.phase0?.measurement, "voltage"), "");
    sim.setMeasurementRaw(id, 5, "powerFactor", null);
    sim.setMeasurementRaw(id, "phase0", "voltage", null);
    tree = await api(sim);
    assert.match(outletValue(tree, id, 5, "powerFactor") ?? "", NUMBER);
    assert.match(valueOf(tree.dev[id]?.entity.phase0?.measurement, "voltage") ?? "", NUMBER);
  });

  it("alarms can be raised on a device, an outlet and an entity", async () => {
    const id = ids[0] ?? "";
    sim.setAlarm(id, null, { state: "alarm", severity: "warning" });
    sim.setAlarm(id, 4, { state: "active", severity: "alarm" });
    sim.setAlarm(id, "breaker1", { state: "alarm", severity: "alarm" });
    const dev = (await api(sim)).dev[id];
    assert.deepEqual(dev?.alarm, { state: "alarm", severity: "warning" });
    assert.deepEqual(dev?.outlet["4"]?.alarm, { state: "active", severity: "alarm" });
    assert.deepEqual(dev?.entity.breaker1?.alarm, { state: "alarm", severity: "alarm" });
    sim.setAlarm(id, null, null);
    sim.setAlarm(id, 4, null);
    sim.setAlarm(id, "breaker1", null);
    assert.deepEqual((await api(sim)).dev[id]?.outlet["4"]?.alarm, { state: "none", severity: "alarm" });
  });

  it("removed outlets and devices disappear from the tree", async () => {
    const [first, second] = ids as [string, string];
    sim.removeOutlet(first, 11);
    let tree = await api(sim);
    assert.equal(tree.dev[first]?.outlet["11"], undefined);
    assert.ok(!(tree.dev[first]?.layout as Record<string, string[]>)["3"]?.includes("outlet/11"));
    assert.equal((await getJson(`${sim.url}/api/dev/${first}/outlet/11`)).retCode, 3001);
    sim.removeDevice(second);
    tree = await api(sim);
    assert.deepEqual(Object.keys(tree.dev), [first]);
    assert.deepEqual(sim.deviceIds(), [first]);
    assert.throws(() => sim.outlet(second, 0));
  });
});

describe("simulator determinism", () => {
  const sims: Simulator[] = [];
  after(() => Promise.all(sims.map((s) => s.close())));

  it("the same seed and clock give the same ids and values; other seeds other ids", async () => {
    const clock = (): number => 1_700_000_000_000;
    const [a, b, c] = await Promise.all([
      startSimulator({ seed: 42, clock, oneview: true }),
      startSimulator({ seed: 42, clock, oneview: true }),
      startSimulator({ seed: 43, clock, oneview: true }),
    ]);
    sims.push(a, b, c);
    assert.deepEqual(a.deviceIds(), b.deviceIds());
    assert.equal(new Set(a.deviceIds()).size, 3, "distinct across the units of a cluster");
    for (const id of c.deviceIds()) assert.ok(!a.deviceIds().includes(id));
    const [ta, tb] = await Promise.all([api(a), api(b)]);
    assert.deepEqual(ta.dev, tb.dev);
  });
});

describe("simulator reads: frozen", () => {
  const sims: Simulator[] = [];
  after(() => Promise.all(sims.map((s) => s.close())));

  it("frozen: the values stand still while the clock runs; outlet switching still works", async () => {
    let now = 1_700_000_000_000;
    const clock = (): number => now;
    const [frozen, living] = await Promise.all([
      startSimulator({ seed: 5, outlets: 6, clock, frozen: true }),
      startSimulator({ seed: 5, outlets: 6, clock }),
    ]);
    sims.push(frozen, living);
    const [f1, l1] = await Promise.all([api(frozen), api(living)]);
    now += 10 * 60_000;
    const [f2, l2] = await Promise.all([api(frozen), api(living)]);
    assert.deepEqual(f2.dev, f1.dev, "ten minutes later a frozen PDU reads the same");
    assert.notDeepEqual(l2.dev, l1.dev, "a living one does not");
    const id = frozen.deviceIds()[0]!;
    assert.equal(living.deviceIds()[0], id, "same ids as the living simulator of the same seed");
    assert.notEqual(outletValue(f2, id, 0, "realPower"), "0");
    frozen.setOutletState(id, 0, "off");
    const f3 = await api(frozen);
    assert.equal(outletValue(f3, id, 0, "realPower"), "0");
    assert.equal(f3.dev[id]?.outlet["0"]?.state, "off");
  });
});

describe("simulator reads: OneView cluster", () => {
  let sim: Simulator;
  before(async () => {
    sim = await startSimulator({ oneview: { members: 2 }, devices: 1, outlets: 8 });
  });
  after(() => sim.close());

  interface Host {
    cache: WireApi;
    webPort: number;
    httpsPort: number;
    groupMap: { dev: Record<string, { outlet: Record<string, { group: string | null }> }> };
  }
  interface Rollup {
    type: string;
    units: string;
    sumValue?: string;
    avgValue?: string;
    minValue?: string;
    maxValue?: string;
  }
  /** A rollup node: its rollup measurements sit under `measurement`, like an outlet's. */
  interface RollupNode {
    name: string;
    measurement: Record<string, Rollup>;
  }
  interface Group {
    name: string;
    label: string;
    state: string;
    order: number;
    snmpInstance: number;
    entity: { outlet?: Record<string, RollupNode>; pduTotal?: Record<string, RollupNode> };
  }
  /** Every rollup measurement under `entity.<kind>.<n>.measurement`. */
  const rollups = (nodes: Record<string, RollupNode> | undefined): Rollup[] =>
    Object.values(nodes ?? {}).flatMap((n) => Object.values(n.measurement));
  interface OneView {
    host: Record<string, Host>;
    group: Record<string, Group>;
    info: unknown;
    conf: unknown;
    cli: unknown;
  }
  const oneview = async (): Promise<OneView> => {
    const env = await getJson(`${sim.url}/oneview`);
    assert.equal(env.retCode, 0);
    return env.data as OneView;
  };

  it("the master says enabled, members do not, and each port serves its own unit", async () => {
    assert.equal(sim.units.length, 3);
    assert.equal((await getJson(`${sim.url}/api/conf/oneview/enabled`)).data, true);
    for (const unit of sim.units.slice(1)) {
      assert.notEqual(unit.port, sim.port);
      assert.equal((await getJson(`${unit.url}/api/conf/oneview/enabled`)).data, false);
      assert.deepEqual(Object.keys((await api(sim, unit.url)).dev), unit.deviceIds);
      assert.equal((await getJson(`${unit.url}/oneview`)).retCode, 3001);
    }
    assert.deepEqual(Object.keys((await api(sim)).dev), sim.units[0]?.deviceIds);
  });

  it("/oneview has every unit in host, with its cache, proxy ports and groupMap", async () => {
    const ov = await oneview();
    assert.ok(ov.info !== undefined && ov.conf !== undefined && ov.cli !== undefined);
    assert.deepEqual(Object.keys(ov.host).sort(), sim.units.map((u) => u.hostKey).sort());
    for (const unit of sim.units) {
      const host = ov.host[unit.hostKey] as Host;
      assert.deepEqual(Object.keys(host.cache.dev), unit.deviceIds);
      assert.equal(host.cache.sys.serialNumber, unit.serialNumber);
      if (unit.role === "master") {
        assert.ok(host.webPort <= 0 && host.httpsPort <= 0);
      } else {
        assert.equal(host.webPort, unit.port);
        assert.equal(host.httpsPort, unit.port);
      }
      for (const id of unit.deviceIds) {
        const map = host.groupMap.dev[id]?.outlet ?? {};
        assert.deepEqual(Object.keys(map), Object.keys(host.cache.dev[id]?.outlet ?? {}));
        for (const { group } of Object.values(map))
          assert.ok(group === null || ["2", "3", "unassigned"].includes(group));
      }
    }
  });

  it("has total, unassigned and two user groups spread over several units", async () => {
    const ov = await oneview();
    assert.deepEqual(Object.keys(ov.group).sort(), ["2", "3", "total", "unassigned"]);
    for (const group of Object.values(ov.group)) {
      assert.equal(typeof group.name, "string");
      assert.equal(typeof group.label, "string");
      assert.equal(typeof group.state, "string");
      assert.ok(Number.isInteger(group.order) && Number.isInteger(group.snmpInstance));
      for (const nodes of [group.entity.outlet, group.entity.pduTotal]) {
        assert.ok(Object.keys(nodes ?? {}).every((k) => INT_KEY.test(k)));
        for (const node of Object.values(nodes ?? {})) assert.equal(typeof node.measurement, "object");
      }
    }
    assert.ok(ov.group.total?.entity.pduTotal, "total rolls up the devices' totals");
    assert.equal(ov.group.total?.entity.outlet, undefined, "as on real units: no outlet rollup on total");
    assert.deepEqual(ov.group.unassigned?.entity, {}, "as on real units: no rollups on unassigned");
    for (const key of ["2", "3"]) {
      const units = new Set(
        sim.groupMembers(key).map((m) => sim.units.find((u) => u.deviceIds.includes(m.deviceId))),
      );
      assert.ok(units.size >= 2, `group ${key} spans ${units.size} units`);
    }
  });

  it("group rollups are string statistics over the member outlets", async () => {
    const ov = await oneview();
    const caches = Object.values(ov.host).map((h) => h.cache);
    const memberValues = (key: string, type: string): number[] =>
      sim.groupMembers(key).map((m) => {
        const cache = caches.find((c) => c.dev[m.deviceId]);
        return Number(cache ? outletValue(cache, m.deviceId, m.index, type) : NaN);
      });
    for (const key of ["2", "3"]) {
      const rollup = rollups(ov.group[key]?.entity.outlet).find((r) => r.type === "realPower");
      const values = memberValues(key, "realPower");
      assert.ok(values.length > 0);
      assert.equal(rollup?.units, "W");
      assert.equal(rollup?.sumValue, String(values.reduce((a, b) => a + b, 0)));
      assert.equal(rollup?.minValue, String(Math.min(...values)));
      assert.equal(rollup?.maxValue, String(Math.max(...values)));
      assert.equal(typeof rollup?.avgValue, "string");
    }
    const energy = rollups(ov.group["2"]?.entity.outlet).find((r) => r.type === "energy");
    assert.equal(typeof energy?.sumValue, "string");
    assert.equal(energy?.avgValue, undefined, "energy rolls up as a sum only");
    const total = rollups(ov.group.total?.entity.pduTotal).find((r) => r.type === "realPower");
    const deviceSum = caches
      .flatMap((c) => Object.values(c.dev))
      .reduce((n, d) => n + Number(valueOf(d.entity.total0?.measurement, "realPower")), 0);
    assert.equal(total?.sumValue, String(deviceSum));
  });

  it("setGroupMembers moves outlets between groups; an empty group has no statistics", async () => {
    const [master, member] = sim.units;
    const refs = [
      { deviceId: master?.deviceIds[0] ?? "", index: 5 },
      { deviceId: member?.deviceIds[0] ?? "", index: 7 },
    ];
    sim.setGroupMembers("9", refs);
    assert.deepEqual(sim.groupMembers("9"), refs);
    sim.setGroupMembers("3", []);
    const ov = await oneview();
    assert.equal(
      ov.host[member?.hostKey ?? ""]?.groupMap.dev[refs[1]?.deviceId ?? ""]?.outlet["7"]?.group,
      "9",
    );
    assert.ok(ov.group["9"]);
    const empty = rollups(ov.group["3"]?.entity.outlet);
    assert.ok(empty.length > 0 && empty.every((r) => r.sumValue === undefined));
    assert.deepEqual(sim.groupMembers("3"), []);
  });
});
