import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseApiTree, parseOneView } from "../../../src/pdu/geist/parse.js";
import { ParseError } from "../../../src/pdu/errors.js";
import { compareKeys, findGroup, type Device, type Snapshot } from "../../../src/pdu/model.js";
import {
  oneViewTree,
  singleUnitTree,
  SPEC_EXAMPLE_API_RESPONSE,
} from "../../../testkit/fixtures/geist-trees.js";

type Json = Record<string, unknown>;

function device(snapshot: Snapshot, id: string): Device {
  const d = snapshot.devices.find((x) => x.id === id);
  assert.ok(d, `device ${id} present`);
  return d;
}

function specExampleData(): unknown {
  const envelope = JSON.parse(SPEC_EXAMPLE_API_RESPONSE) as { data: unknown };
  return envelope.data;
}

/** Walks a fixture by keys (for making it malformed). */
function at(tree: Json, ...keys: string[]): Json {
  let cur: unknown = tree;
  for (const k of keys) cur = (cur as Json)[k];
  return cur as Json;
}

describe("parseApiTree: the protocol page's §7 example", () => {
  const snap = parseApiTree(specExampleData(), "rack-a", 1_700_000_000_000);

  it("reads the unit's identity", () => {
    assert.equal(snap.instanceId, "rack-a");
    assert.equal(snap.timestamp, 1_700_000_000_000);
    assert.equal(snap.mode, "single");
    assert.deepEqual(snap.system, {
      label: "Rack PDU A",
      oem: "GEI",
      model: "SIM-2",
      modelNumber: "SIM-2-OUT",
      serialNumber: "SIM0000000001",
      hardwareVersion: "1.0",
      firmwareVersion: "5.0.0",
      apiVersion: "1.0.1",
      macAddress: "02:00:5e:00:53:01",
      ipAddress: "192.0.2.50",
    });
    assert.deepEqual(snap.groups, []);
  });

  it("reads the device, its entities and outlets", () => {
    assert.equal(snap.devices.length, 1);
    const d = device(snap, "E4A1C0FFEE000001");
    assert.equal(d.displayName, "Rack PDU A");
    assert.equal(d.type, "rpdu");
    assert.equal(d.state, "normal");
    assert.equal(d.order, 1);
    assert.equal(d.lifetimeEnergy, 123456);
    assert.equal(d.outletControlEnabled, true);
    assert.equal(d.route, null);
    assert.equal(d.system, snap.system);
    assert.deepEqual(d.alarm, { state: "none", severity: "alarm", raised: false });

    assert.deepEqual(
      d.entities.map((e) => e.key),
      ["phase0", "total0"],
    );
    const phase = d.entities[0];
    assert.ok(phase);
    assert.equal(phase.displayName, "Phase");
    assert.deepEqual(
      phase.measurements.map((m) => [m.type, m.value, m.units, m.alarm?.raised ?? null]),
      [
        ["current", 1.1, "A", false],
        ["voltage", 121.4, "V", null],
      ],
    );

    const [o0, o1] = d.outlets;
    assert.ok(o0 && o1);
    assert.equal(d.outlets.length, 2);
    assert.deepEqual(
      [o0.index, o0.name, o0.label, o0.displayName, o0.state, o0.rebootDelay, o0.poaAction],
      [0, "Outlet 1", "web-01", "web-01", "on", 5, "last"],
    );
    assert.deepEqual(
      o0.measurements.map((m) => [m.type, m.value]),
      [
        ["current", 0.52],
        ["energy", 301.118],
        ["realPower", 58],
      ],
    );
    assert.deepEqual([o1.index, o1.displayName, o1.state, o1.poaAction], [1, "Outlet 2", "off", "off"]);
  });

  it("freezes the snapshot and its arrays", () => {
    assert.ok(Object.isFrozen(snap));
    assert.ok(Object.isFrozen(snap.devices));
    assert.ok(Object.isFrozen(snap.groups));
    assert.ok(Object.isFrozen(snap.devices[0]?.outlets));
    assert.throws(() => (snap.devices as Device[]).push(snap.devices[0] as Device), TypeError);
  });
});

describe("parseApiTree: tolerance", () => {
  const snap = parseApiTree(singleUnitTree(), "x", 1);
  const d1 = device(snap, "D1");

  it("sorts devices by id and fills defaults for a bare device", () => {
    assert.deepEqual(
      snap.devices.map((d) => d.id),
      ["A0", "D1"],
    );
    const a0 = device(snap, "A0");
    assert.equal(a0.displayName, "A0");
    assert.equal(a0.lifetimeEnergy, 77);
    assert.equal(a0.order, null);
    assert.equal(a0.outletControlEnabled, true, "only an explicit false disables control");
    assert.deepEqual(a0.alarm, { state: "none", severity: "", raised: false });
    assert.deepEqual(a0.outlets, []);
    assert.deepEqual(a0.entities, []);
  });

  it("falls back on sys.name and ignores unknown fields", () => {
    assert.equal(snap.system.label, "rPDU");
    assert.equal(snap.system.firmwareVersion, "6.1.2");
    assert.equal(snap.system.ipAddress, "192.0.2.7");
    assert.equal(snap.system.serialNumber, "");
    assert.equal(d1.displayName, "PDU one");
    assert.equal(d1.lifetimeEnergy, null, "12.5 is not an integer");
    assert.equal(d1.outletControlEnabled, false);
    assert.deepEqual(d1.alarm, { state: "Alarm", severity: "alarm", raised: true });
  });

  it("orders outlet keys 0..11 numerically", () => {
    assert.deepEqual(
      d1.outlets.map((o) => o.index),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    assert.equal(d1.outlets[10]?.displayName, "Outlet 11");
  });

  it("reads non-numeric values as null, sorted by type case-insensitively", () => {
    const o1 = d1.outlets[1];
    assert.ok(o1);
    assert.equal(o1.displayName, "db-01");
    assert.equal(o1.state, "off");
    assert.deepEqual(
      o1.measurements.map((m) => [m.type, m.value]),
      [
        ["apparentPower", 42],
        ["current", null],
        ["Energy", null],
        ["realPower", null],
      ],
    );
    assert.deepEqual(o1.measurements[1]?.alarm, { state: "ACTIVE", severity: "warning", raised: true });
    assert.equal(o1.measurements[0]?.alarm, null);
  });

  it("normalises odd outlet fields", () => {
    const o2 = d1.outlets[2];
    const o3 = d1.outlets[3];
    assert.ok(o2 && o3);
    assert.equal(o2.displayName, "Outlet 3", "blank label and name");
    assert.equal(o2.state, "unknown");
    assert.deepEqual(o2.alarm, { state: "none", severity: "", raised: false });
    assert.equal(o3.onDelay, 15);
    assert.equal(o3.poaAction, null);
    assert.equal(o3.alarm.raised, false);
  });

  it("sorts entities with compareKeys and accepts entities without measurements", () => {
    const keys = d1.entities.map((e) => e.key);
    assert.deepEqual(keys, ["breaker10", "breaker2", "phase0", "total0"].sort(compareKeys));
    assert.deepEqual(keys, [...keys].sort(compareKeys));
    const b10 = d1.entities.find((e) => e.key === "breaker10");
    const b2 = d1.entities.find((e) => e.key === "breaker2");
    const phase = d1.entities.find((e) => e.key === "phase0");
    assert.deepEqual(b10?.measurements, []);
    assert.equal(b2?.displayName, "B3");
    assert.deepEqual(b2?.measurements, []);
    assert.deepEqual(
      phase?.measurements.map((m) => [m.type, m.value]),
      [
        ["current", 4.2],
        ["voltage", 230.5],
      ],
    );
  });
});

describe("parseOneView", () => {
  const snap = parseOneView(oneViewTree(), "cluster", 5);

  it("takes the master's identity and every host's devices with their routes", () => {
    assert.equal(snap.mode, "oneview");
    assert.equal(snap.system.label, "Master A");
    assert.deepEqual(
      snap.devices.map((d) => [d.id, d.route, d.system.label]),
      [
        ["AAAA0001", null, "Master A"],
        ["BBBB0001", { hostKey: "02:00:00:00:00:0b", webPort: 8001, httpsPort: 8443 }, "Member B"],
        ["CCCC0001", { hostKey: "02:00:00:00:00:0c", webPort: 8002, httpsPort: 0 }, "Member C"],
        ["CCCC0002", { hostKey: "02:00:00:00:00:0c", webPort: 8002, httpsPort: 0 }, "Member C"],
      ],
    );
    assert.equal(device(snap, "BBBB0001").outlets.length, 4);
  });

  it("falls back on the first host when no host has ports <= 0", () => {
    const tree = oneViewTree();
    const master = at(tree, "host", "02:00:00:00:00:0a");
    master.webPort = 80;
    const s = parseOneView(tree, "cluster", 5);
    assert.equal(s.system.label, "Member B");
    assert.equal(device(s, "AAAA0001").route?.webPort, 80);
  });

  it("marks a member port that is not a port number unusable, with a warning, never the master", () => {
    const tree = oneViewTree();
    const member = at(tree, "host", "02:00:00:00:00:0b");
    member.webPort = "eighty";
    member.httpsPort = 70000;
    const s = parseOneView(tree, "cluster", 5);
    const route = device(s, "BBBB0001").route;
    assert.ok(route !== null, "a member with broken ports is still a member, not the master");
    assert.ok(Number.isNaN(route.webPort) && Number.isNaN(route.httpsPort));
    assert.equal(s.system.label, "Master A");
    assert.deepEqual(
      (s.warnings ?? []).map((w) => w.path).filter((p) => p.includes("02:00:00:00:00:0b")),
      ['$.host["02:00:00:00:00:0b"].webPort', '$.host["02:00:00:00:00:0b"].httpsPort'],
    );
  });

  it("orders groups by order then key", () => {
    assert.deepEqual(
      snap.groups.map((g) => [g.key, g.displayName, g.order]),
      [
        ["total", "Total", 1],
        ["unassigned", "Unassigned", 2],
        ["2", "Web", 3],
        ["Lab", "Lab", 4],
        ["9", "Empty", null],
      ],
    );
  });

  it("finds members in every host's groupMap, case-insensitively, only for outlets that exist", () => {
    assert.deepEqual(findGroup(snap, "2")?.members, [
      { deviceId: "AAAA0001", index: 0 },
      { deviceId: "BBBB0001", index: 0 },
      { deviceId: "CCCC0001", index: 0 },
    ]);
    assert.deepEqual(findGroup(snap, "unassigned")?.members, [
      { deviceId: "AAAA0001", index: 1 },
      { deviceId: "BBBB0001", index: 1 },
      { deviceId: "BBBB0001", index: 2 },
      { deviceId: "CCCC0002", index: 0 },
    ]);
    assert.deepEqual(findGroup(snap, "Lab")?.members, [{ deviceId: "BBBB0001", index: 3 }]);
    assert.deepEqual(findGroup(snap, "total")?.members, []);
    assert.deepEqual(findGroup(snap, "9")?.members, []);
  });

  it("reads rollups keyed by type and pduTotal + Type", () => {
    assert.deepEqual(findGroup(snap, "2")?.measurements, [
      { key: "current", type: "current", units: "A", sum: 2.5, avg: null, min: null, max: null },
      { key: "realPower", type: "realPower", units: "W", sum: 564, avg: 188, min: 0, max: null },
    ]);
    assert.deepEqual(
      findGroup(snap, "total")?.measurements.map((m) => [m.key, m.sum, m.avg, m.min, m.max]),
      [
        ["pduTotalEnergy", 8909.927, null, null, null],
        ["pduTotalRealPower", 950, 316.6, null, 400],
        ["realPower", 900, null, null, null],
      ],
    );
    assert.deepEqual(findGroup(snap, "unassigned")?.measurements, []);
  });

  it("skips a host without a cache", () => {
    const tree = oneViewTree();
    delete at(tree, "host", "02:00:00:00:00:0c").cache;
    const s = parseOneView(tree, "cluster", 5);
    assert.deepEqual(
      s.devices.map((d) => d.id),
      ["AAAA0001", "BBBB0001"],
    );
    assert.deepEqual(
      findGroup(s, "2")?.members.map((m) => m.deviceId),
      ["AAAA0001", "BBBB0001"],
    );
  });
});

describe("malformed trees throw ParseError with the JSON path", () => {
  type Case = { name: string; oneview?: boolean; path: string; make: () => unknown };
  const cases: Case[] = [
    { name: "data not an object", path: "$", make: () => [] },
    { name: "dev missing", path: "$.dev", make: () => ({ sys: {} }) },
    { name: "dev an array", path: "$.dev", make: () => ({ ...singleUnitTree(), dev: [] }) },
    { name: "no devices", path: "$.dev", make: () => ({ ...singleUnitTree(), dev: {} }) },
    {
      name: "device not an object",
      path: "$.dev.D1",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev").D1 = "x";
        return t;
      },
    },
    {
      name: "outlet map not an object",
      path: "$.dev.D1.outlet",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev", "D1").outlet = [1, 2];
        return t;
      },
    },
    {
      name: "outlet not an object",
      path: "$.dev.D1.outlet.3",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev", "D1", "outlet")["3"] = null;
        return t;
      },
    },
    {
      name: "outlet key not an integer",
      path: "$.dev.D1.outlet.first",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev", "D1", "outlet").first = {};
        return t;
      },
    },
    {
      name: "negative outlet key",
      path: "$.dev.D1.outlet.-1",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev", "D1", "outlet")["-1"] = {};
        return t;
      },
    },
    {
      name: "measurement without a string type",
      path: "$.dev.D1.outlet.4.measurement.1.type",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev", "D1", "outlet", "4", "measurement")["1"] = { type: 5, value: "1" };
        return t;
      },
    },
    {
      name: "outlet measurement map not an object",
      path: "$.dev.D1.outlet.4.measurement",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev", "D1", "outlet", "4").measurement = "n/a";
        return t;
      },
    },
    {
      name: "outlet measurement not an object",
      path: "$.dev.D1.outlet.0.measurement.2",
      make: () => {
        const t = singleUnitTree();
        at(t, "dev", "D1", "outlet", "0", "measurement")["2"] = 7;
        return t;
      },
    },
    { name: "OneView data not an object", oneview: true, path: "$", make: () => "oops" },
    { name: "host missing", oneview: true, path: "$.host", make: () => ({ group: {} }) },
    { name: "no hosts", oneview: true, path: "$.host", make: () => ({ host: {} }) },
    {
      name: "host not an object",
      oneview: true,
      path: '$.host["02:00:00:00:00:0b"]',
      make: () => {
        const t = oneViewTree();
        at(t, "host")["02:00:00:00:00:0b"] = 1;
        return t;
      },
    },
    {
      name: "cache.dev an array",
      oneview: true,
      path: '$.host["02:00:00:00:00:0c"].cache.dev',
      make: () => {
        const t = oneViewTree();
        at(t, "host", "02:00:00:00:00:0c", "cache").dev = [];
        return t;
      },
    },
    {
      name: "member outlet not an object",
      oneview: true,
      path: '$.host["02:00:00:00:00:0b"].cache.dev.BBBB0001.outlet.2',
      make: () => {
        const t = oneViewTree();
        at(t, "host", "02:00:00:00:00:0b", "cache", "dev", "BBBB0001", "outlet")["2"] = "on";
        return t;
      },
    },
    {
      name: "groupMap outlet key not an integer",
      oneview: true,
      path: '$.host["02:00:00:00:00:0a"].groupMap.dev.AAAA0001.outlet.one',
      make: () => {
        const t = oneViewTree();
        at(t, "host", "02:00:00:00:00:0a", "groupMap", "dev", "AAAA0001", "outlet").one = { group: "2" };
        return t;
      },
    },
    {
      name: "groupMap group not a string",
      oneview: true,
      path: '$.host["02:00:00:00:00:0a"].groupMap.dev.AAAA0001.outlet.0.group',
      make: () => {
        const t = oneViewTree();
        at(t, "host", "02:00:00:00:00:0a", "groupMap", "dev", "AAAA0001", "outlet")["0"] = { group: {} };
        return t;
      },
    },
    {
      name: "group not an object",
      oneview: true,
      path: "$.group.2",
      make: () => {
        const t = oneViewTree();
        at(t, "group")["2"] = [];
        return t;
      },
    },
    {
      name: "groupMap not an object",
      oneview: true,
      path: '$.host["02:00:00:00:00:0b"].groupMap',
      make: () => {
        const t = oneViewTree();
        at(t, "host", "02:00:00:00:00:0b").groupMap = "all";
        return t;
      },
    },
    {
      name: "a device reported by two hosts",
      oneview: true,
      path: "$.host",
      make: () => {
        const t = oneViewTree();
        const dev = at(t, "host", "02:00:00:00:00:0c", "cache", "dev");
        dev.AAAA0001 = dev.CCCC0001;
        return t;
      },
    },
    {
      name: "no host has devices",
      oneview: true,
      path: "$.host",
      make: () => ({ host: { a: { webPort: 0 }, b: { webPort: 81, cache: { sys: {} } } } }),
    },
  ];

  for (const c of cases) {
    it(`${c.name} → ${c.path}`, () => {
      const data = c.make();
      assert.throws(
        () => (c.oneview === true ? parseOneView(data, "x", 1) : parseApiTree(data, "x", 1)),
        (e: unknown) => {
          assert.ok(e instanceof ParseError, `ParseError, got ${String(e)}`);
          assert.equal(e.kind, "malformed");
          assert.equal(e.path, c.path);
          assert.ok(e.message.startsWith(`${c.path}: `), e.message);
          return true;
        },
      );
    });
  }
});
