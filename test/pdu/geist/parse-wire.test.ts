/**
 * The parser over the wire fixtures (answers in the exact shape real units send): every device,
 * outlet, entity, measurement, host, groupMap entry and group rollup is asserted; then the
 * degrade-don't-fail rules, with a property that damages any optional part of either fixture.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseApiTree, parseOneView, MAX_PARSE_WARNINGS } from "../../../src/pdu/geist/parse.js";
import { ParseError } from "../../../src/pdu/errors.js";
import { findGroup, type Snapshot } from "../../../src/pdu/model.js";
import { renderSnapshot } from "../../../testkit/fixtures/render.js";
import { wireApi, wireEnvelope, wireOneView, type Json } from "../../../testkit/fixtures/wire.js";

const OUTLET = (index: number, label: string, state: string, values: string): string =>
  `  outlet ${index} ${label === "" ? `Outlet ${index + 1}` : label} name=Outlet ${index + 1} label=${label} ${state} ` +
  `alarm=none/alarm delays=0/0/5 poa=last ${values}`;

/** The four outlets every fixture device starts with. */
const FIRST_FOUR = [
  OUTLET(0, "srv-1", "on", "apparentPower=45VA current=0.33A energy=100kWh realPower=40W"),
  OUTLET(1, "", "on", "apparentPower=48VA current=0.36A energy=111.5kWh realPower=43W"),
  OUTLET(2, "srv-3", "on", "apparentPower=51VA current=0.38A energy=123kWh realPower=46W"),
];
const OUTLET_3 = OUTLET(3, "srv-4", "on", "apparentPower=54VA current=0.41A energy=134.5kWh realPower=49W");
const BREAKER = "  entity breaker0 Left bank alarm=none/ current=1.7A[none/warning]";
const PHASE = "  entity phase0 Phase alarm=none/alarm current=3.3A realPower=396W voltage=121.4V";
const TOTAL = "  entity total0 Total alarm=none/ energy=812.337kWh realPower=396W";
const DEVICE_TAIL = "type=rpdu state=normal order=1 energy=123456 control=true alarm=none/alarm";

describe("parseApiTree over the wire fixture api-single-unit.json", () => {
  it("has both devices with every outlet, measurement, entity and the unit's identity", () => {
    assert.deepEqual(renderSnapshot(parseApiTree(wireApi(), "rack-12", 1)), [
      "single system=Rack 12 PDU|AC12000017|02:00:5e:00:53:11|127.0.0.1|5.9.1",
      `device A0AE260C851900C3 name=rPDU label=Rack 12 A display=Rack 12 A ${DEVICE_TAIL} route=direct system=Rack 12 PDU|AC12000017`,
      ...FIRST_FOUR,
      OUTLET(
        3,
        "srv-4",
        "on",
        "apparentPower=54VA current=0.41A energy=134.5kWh powerFactor=null% realPower=49W",
      ),
      OUTLET(4, "", "off", "apparentPower=0VA current=0A energy=146kWh realPower=0W"),
      OUTLET(5, "srv-6", "on", "apparentPower=60VA current=0.46A energy=157.5kWh realPower=55W"),
      BREAKER,
      PHASE,
      TOTAL,
      `device A0AE260C851900C4 name=rPDU label= display=rPDU ${DEVICE_TAIL} route=direct system=Rack 12 PDU|AC12000017`,
      ...FIRST_FOUR,
      OUTLET_3,
      BREAKER,
      PHASE,
      "  entity total0 Total alarm=none/", // no measurement map at all
    ]);
  });

  it("reads the value strings as numbers, n/a as null, and warns about nothing", () => {
    const snap = parseApiTree(wireApi(), "rack-12", 1);
    const outlet = snap.devices[0]?.outlets[3];
    assert.deepEqual(
      outlet?.measurements.map((m) => m.value),
      [54, 0.41, 134.5, null, 49],
    );
    assert.deepEqual(snap.warnings, []);
  });
});

describe("parseOneView over the wire fixture oneview-cluster.json", () => {
  const snap = parseOneView(wireOneView(), "row-3", 1);

  it("has both hosts' devices, the member behind proxy port 9101, every group member and rollup", () => {
    assert.deepEqual(renderSnapshot(snap), [
      "oneview system=Row 3 master|AC3000001|02:00:5e:00:53:11|127.0.0.1|5.9.1",
      `device 0019850C269E0001 name=rPDU label=R3 top display=R3 top ${DEVICE_TAIL} route=direct system=Row 3 master|AC3000001`,
      ...FIRST_FOUR,
      OUTLET_3,
      BREAKER,
      PHASE,
      TOTAL,
      `device 0019850C27110002 name=rPDU label= display=rPDU ${DEVICE_TAIL} route=0019850c2711:9101/0 system=Row 3 member|AC3000002`,
      ...FIRST_FOUR,
      OUTLET_3,
      BREAKER,
      PHASE,
      TOTAL,
      "group total Total name=Total state=normal order=0 members=",
      "  rollup pduTotalEnergy energy kWh sum=8909.927 avg=null min=null max=null",
      "  rollup pduTotalRealPower realPower W sum=1211 avg=null min=null max=null",
      // groupMap "unassigned" (269E0001/2, 27110002/0, 27110002/1) and null (269E0001/3, 27110002/3)
      "group unassigned Unassigned name=Unassigned state=normal order=1 members=" +
        "0019850C269E0001/2,0019850C269E0001/3,0019850C27110002/0,0019850C27110002/1,0019850C27110002/3",
      "group 2 db-cluster name=Rack 1 state=normal order=2 members=0019850C269E0001/0,0019850C269E0001/1,0019850C27110002/2",
      "  rollup apparentPower apparentPower VA sum=590 avg=197 min=0 max=241",
      "  rollup energy energy kWh sum=2573.487 avg=null min=null max=null",
      "  rollup realPower realPower W sum=564 avg=188 min=0 max=230",
    ]);
    assert.deepEqual(snap.warnings, []);
  });

  it("routes only the member through its proxy port", () => {
    assert.deepEqual(
      snap.devices.map((d) => [d.id, d.route]),
      [
        ["0019850C269E0001", null],
        ["0019850C27110002", { hostKey: "0019850c2711", webPort: 9101, httpsPort: 0 }],
      ],
    );
  });

  it("still reads the flattened rollups of the old simulator as nothing, not as a failure", () => {
    const tree = wireOneView();
    const entity = at(tree, "group", "2", "entity");
    entity.outlet = { "0": { type: "realPower", units: "W", sumValue: "5" } };
    const s = parseOneView(tree, "row-3", 1);
    assert.deepEqual(findGroup(s, "2")?.measurements, []);
    assert.equal(findGroup(s, "2")?.members.length, 3);
  });
});

/** Walks a tree by keys. */
function at(tree: Json, ...keys: string[]): Json {
  let cur: unknown = tree;
  for (const k of keys) cur = (cur as Json)[k];
  return cur as Json;
}

describe("degrade, don't fail: a malformed optional part is dropped with its path", () => {
  type Case = { name: string; oneview?: boolean; change: (t: Json) => void; warnings: string[] };
  const cases: Case[] = [
    {
      name: "a rollup node that is not an object",
      oneview: true,
      change: (t) => (at(t, "group", "2", "entity", "outlet")["0"] = "564"),
      warnings: ["$.group.2.entity.outlet.0: rollup node is not an object; dropped"],
    },
    {
      name: "a rollup measurement without a type",
      oneview: true,
      change: (t) =>
        (at(t, "group", "total", "entity", "pduTotal", "0", "measurement")["3"] = { sumValue: "1" }),
      warnings: [
        "$.group.total.entity.pduTotal.0.measurement.3.type: rollup measurement has no string type; dropped",
      ],
    },
    {
      name: "a group entity that is an array",
      oneview: true,
      change: (t) => (at(t, "group", "2").entity = [1, 2]),
      warnings: ["$.group.2.entity: expected an object; the group's rollups dropped"],
    },
    {
      name: "an entity that is a number",
      change: (t) => (at(t, "dev", "A0AE260C851900C3", "entity").breaker0 = 7),
      warnings: ["$.dev.A0AE260C851900C3.entity.breaker0: entity is not an object; dropped"],
    },
    {
      name: "an entity's odd measurement",
      change: (t) => (at(t, "dev", "A0AE260C851900C4", "entity", "phase0", "measurement")["1"] = ["3.30"]),
      warnings: ["$.dev.A0AE260C851900C4.entity.phase0.measurement.1: measurement is not an object; dropped"],
    },
    {
      name: "an outlet alarm that is a string",
      change: (t) => (at(t, "dev", "A0AE260C851900C3", "outlet", "2").alarm = "ALARM"),
      warnings: ["$.dev.A0AE260C851900C3.outlet.2.alarm: alarm is not an object; read as clear"],
    },
    {
      name: "sys fields that are not strings, a network map that is a string",
      change: (t) => {
        at(t, "sys").serialNumber = 12;
        at(t, "conf").network = "eth0";
      },
      warnings: [
        "$.sys.serialNumber: not a string; read as blank",
        "$.conf.network: expected an object; the network identity dropped",
      ],
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const tree = c.oneview === true ? wireOneView() : wireApi();
      const before = c.oneview === true ? parseOneView(tree, "x", 1) : parseApiTree(tree, "x", 1);
      c.change(tree);
      const snap = c.oneview === true ? parseOneView(tree, "x", 1) : parseApiTree(tree, "x", 1);
      assert.deepEqual(
        (snap.warnings ?? []).map((w) => `${w.path}: ${w.problem}`),
        c.warnings,
      );
      assert.deepEqual(outletValues(snap), outletValues(before), "every outlet and its values kept");
    });
  }

  it("keeps the other rollups of a group when one is malformed", () => {
    const tree = wireOneView();
    at(tree, "group", "2", "entity", "outlet", "0", "measurement")["1"] = null;
    const snap = parseOneView(tree, "x", 1);
    assert.deepEqual(
      findGroup(snap, "2")?.measurements.map((m) => [m.key, m.sum]),
      [
        ["energy", 2573.487],
        ["realPower", 564],
      ],
    );
  });

  it("keeps at most MAX_PARSE_WARNINGS warnings and counts the rest", () => {
    const tree = wireApi();
    const outlets = at(tree, "dev", "A0AE260C851900C3", "outlet");
    for (const key of Object.keys(outlets)) at(outlets, key).alarm = 1;
    const entity = at(tree, "dev", "A0AE260C851900C4", "entity");
    for (let i = 0; i < 30; i++) entity[`x${i}`] = i;
    const warnings = parseApiTree(tree, "x", 1).warnings ?? [];
    assert.equal(warnings.length, MAX_PARSE_WARNINGS);
    assert.match(warnings.at(-1)?.problem ?? "", /and 16 more malformed optional parts/);
  });
});

// ---- the property: any optional subtree → random JSON; any essential part → a clear error ----

/** Only the parts of a snapshot a poll must never lose. */
function outletValues(s: Snapshot): unknown {
  return s.devices.map((d) => [
    d.id,
    d.route,
    d.outlets.map((o) => [
      o.index,
      o.name,
      o.label,
      o.state,
      o.measurements.map((m) => [m.type, m.value, m.units]),
    ]),
  ]);
}

/** Group keys with their members (in key order: a group's `order` is optional). */
const groupMembers = (s: Snapshot): unknown =>
  s.groups.map((g) => [g.key, g.members] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** Every node of a tree as its key path. */
function paths(tree: unknown, prefix: string[] = [], out: string[][] = []): string[][] {
  if (typeof tree !== "object" || tree === null || Array.isArray(tree)) return out;
  for (const [k, v] of Object.entries(tree)) {
    const p = [...prefix, k];
    out.push(p);
    paths(v, p, out);
  }
  return out;
}

/** The parser's JSON path spelling. */
const formatPath = (p: readonly string[]): string =>
  "$" + p.map((s) => (/^[A-Za-z0-9_-]+$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`)).join("");

const K = "[^/]+";
/** A unit's `/api` tree, alone or as a OneView host's cache. */
const UNIT = `(?:|host/${K}/cache/)`;
const OPTIONAL = new RegExp(
  "^(?:" +
    [
      `${UNIT}(?:sys|conf|auth|alarm)`,
      `${UNIT}dev/${K}/(?:name|label|type|state|order|snmpInstance|lifetimeEnergy|conf|point|alarm|layout|entity)`,
      `${UNIT}dev/${K}/outlet/${K}/(?:alarm|futureField|mode|poaDelay|rebootHoldDelay|timeToAction|relayFailure|parent|parentBreaker|parentPhase)`,
      `${UNIT}dev/${K}/outlet/${K}/measurement/${K}/(?:alarm|state|displayEnabled|datalogEnabled)`,
      "(?:info|conf|cli)",
      `host/${K}/(?:type|state|snmpPort|order|snmpInstance|group)`,
      `group/${K}/(?:name|label|state|order|snmpInstance|entity)`,
    ].join("|") +
    ")(?:/.*)?$",
);
const ESSENTIAL = new RegExp(
  "^(?:" +
    [
      `${UNIT}dev(?:/${K}(?:/outlet(?:/${K}(?:/measurement(?:/${K})?)?)?)?)?`,
      `host(?:/${K}(?:/cache|/groupMap(?:/dev(?:/${K}(?:/outlet(?:/${K})?)?)?)?)?)?`,
      `group(?:/${K})?`,
    ].join("|") +
    ")$",
);

const FIXTURES = [
  { name: "GET /api", tree: wireApi, parse: parseApiTree },
  { name: "GET /oneview", tree: wireOneView, parse: parseOneView },
] as const;

function replaceAt(tree: Json, p: readonly string[], value: unknown): void {
  at(tree, ...p.slice(0, -1))[p.at(-1) as string] = value;
}

/** Anything JSON, deep objects included. */
const anyJson = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 5 }), { maxKeys: 6 }),
);
/** JSON that can never be a map: what a malformed essential map or item looks like. */
const notAnObject = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.string(),
  fc.boolean(),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
);

describe("property: damage to the fixtures", () => {
  for (const f of FIXTURES) {
    const all = paths(f.tree()).map((p) => p.join("/"));
    const optional = all.filter((p) => OPTIONAL.test(p));
    const essential = all.filter((p) => ESSENTIAL.test(p));

    it(`${f.name}: the fixture has optional and essential parts of every kind`, () => {
      assert.ok(optional.length > 100, `${optional.length} optional paths`);
      assert.ok(essential.length > 20, `${essential.length} essential paths`);
      assert.ok(!optional.some((p) => ESSENTIAL.test(p)), "no path is both");
    });

    it(`${f.name}: an optional subtree replaced by random JSON keeps every outlet and its values`, () => {
      const baseline = f.parse(f.tree(), "x", 1);
      fc.assert(
        fc.property(fc.constantFrom(...optional), anyJson, (where, value) => {
          const tree = f.tree();
          const p = where.split("/");
          replaceAt(tree, p, value);
          const snap = f.parse(tree, "x", 1);
          assert.deepEqual(outletValues(snap), outletValues(baseline));
          assert.deepEqual(groupMembers(snap), groupMembers(baseline));
          const prefix = formatPath(p);
          for (const w of snap.warnings ?? [])
            assert.ok(w.path.startsWith(prefix), `warning ${w.path} lies in the replaced ${prefix}`);
        }),
        { numRuns: 300 },
      );
    });

    it(`${f.name}: an essential part replaced by a non-object fails with that part's path`, () => {
      fc.assert(
        fc.property(fc.constantFrom(...essential), notAnObject, (where, value) => {
          const tree = f.tree();
          const p = where.split("/");
          replaceAt(tree, p, value);
          try {
            f.parse(tree, "x", 1);
          } catch (e) {
            assert.ok(e instanceof ParseError, `a ParseError, not ${String(e)}`);
            assert.equal(e.path, formatPath(p));
            assert.ok(e.message.startsWith(`${formatPath(p)}: `), e.message);
            return;
          }
          assert.fail(`replacing ${where} with ${JSON.stringify(value)} did not fail`);
        }),
        { numRuns: 300 },
      );
    });
  }

  it("a device or outlet replaced by null fails too (null only means empty for maps)", () => {
    const tree = wireEnvelope("oneview").data as Json;
    at(tree, "host", "0019850c2711", "cache", "dev", "0019850C27110002", "outlet")["1"] = null;
    assert.throws(
      () => parseOneView(tree, "x", 1),
      (e: unknown) =>
        e instanceof ParseError && e.path === "$.host.0019850c2711.cache.dev.0019850C27110002.outlet.1",
    );
  });
});
