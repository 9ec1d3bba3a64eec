/**
 * The bounds on what a PDU sends (src/pdu/bounds.ts), on model snapshots as any driver returns
 * them: within the bounds a snapshot passes as the same object; an over-long id leaves its thing
 * out (never cut into another id); an over-long text reads as blank with the display name falling
 * back; a count over a bound refuses the answer; every device left out refuses it too; warnings
 * stay bounded; a restamped snapshot is not walked again, whether it was passed, bounded or refused.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BoundsError, PDU_BOUNDS, SnapshotBounds } from "../../src/pdu/bounds.js";
import {
  restamp,
  type Device,
  type Entity,
  type Group,
  type Outlet,
  type Snapshot,
} from "../../src/pdu/model.js";
import {
  cluster,
  device,
  group,
  measurement,
  outlet,
  singleUnit,
  snapshot,
  system,
} from "../../testkit/snapshot-builders.js";

const check = (s: Snapshot): Snapshot => new SnapshotBounds().apply(s);
const long = (n: number, c = "x") => c.repeat(n);
const problems = (s: Snapshot) => (s.warnings ?? []).map((w) => `${w.path}: ${w.problem}`);

describe("bounds on what a PDU sends", () => {
  it("passes a snapshot within the bounds as the same object, at exactly the bounds too", () => {
    const s = singleUnit("lab", "DEV1", 4);
    assert.equal(check(s), s);
    const edge = snapshot("lab", [
      device({
        id: long(PDU_BOUNDS.idChars, "d"),
        label: long(PDU_BOUNDS.textChars, "l"),
        system: system("Rack", long(PDU_BOUNDS.textChars, "s")),
        outlets: Array.from({ length: PDU_BOUNDS.outletsPerDevice }, (_, i) =>
          outlet(i, { label: long(PDU_BOUNDS.textChars) }),
        ),
      }),
    ]);
    assert.equal(check(edge), edge);
    const c = cluster("c", "MASTER", "MEMBER");
    assert.equal(check(c), c);
  });

  it("leaves out a device whose id is too long, never cutting it into another id", () => {
    const hugeId = long(6_000_000, "E");
    const s = snapshot("lab", [
      device({ id: "GOOD", outlets: [outlet(0)] }),
      device({ id: hugeId, outlets: [outlet(0), outlet(1)] }),
    ]);
    const bounded = check(s);
    assert.deepEqual(
      bounded.devices.map((d) => d.id),
      ["GOOD"],
    );
    assert.ok(bounded.devices[0] === s.devices[1], "the other device is the same object");
    assert.deepEqual(problems(bounded), [
      `devices[0]: device id of 6000000 characters is longer than ${PDU_BOUNDS.idChars}; the device is left out`,
    ]);
    assert.ok(JSON.stringify(bounded).length < 10_000);
  });

  it("refuses an answer whose every device is left out (a PDU never turns into no devices)", () => {
    const s = singleUnit("lab", long(PDU_BOUNDS.idChars + 1), 2);
    assert.throws(
      () => check(s),
      (e: unknown) =>
        e instanceof BoundsError &&
        e.kind === "malformed" &&
        /^answer refused: every device of the answer is left out: device id of 257 characters/.test(
          e.message,
        ),
    );
  });

  it("reads over-long texts as blank, the display names falling back as a driver's do", () => {
    const hugeLabel = long(300_000, "L");
    const base = device({
      id: "DEV",
      label: hugeLabel,
      outlets: [outlet(0, { label: hugeLabel }), outlet(1)],
    });
    const dev: Device = {
      ...base,
      state: long(257),
      system: { ...system("Rack", "SER"), model: long(1000), serialNumber: long(257) },
      entities: [
        { ...base.entities[0]!, label: long(500), displayName: long(500) },
        { ...base.entities[1]!, key: long(PDU_BOUNDS.idChars + 1) },
      ],
      outlets: [
        {
          ...base.outlets[0]!,
          poaAction: long(999),
          alarm: { state: long(400), severity: "alarm", raised: false },
          measurements: [
            {
              ...measurement("realPower", 5, long(33)),
              alarm: { state: "alarm", severity: long(300), raised: true },
            },
            measurement(long(PDU_BOUNDS.idChars + 1), 1, "W"),
          ],
        },
        base.outlets[1]!,
      ],
    };
    const s = snapshot("lab", [dev]);
    const bounded = check(s);
    const d = bounded.devices[0]!;
    assert.equal(d.label, "");
    assert.equal(d.displayName, "Rack PDU", "the device's name");
    assert.equal(d.state, "");
    assert.equal(d.system.model, "");
    assert.equal(d.system.serialNumber, "");
    assert.equal(d.system.label, "Rack");
    assert.ok(
      bounded.system === d.system,
      "one identity object, bounded once for the snapshot and its device",
    );
    const o = d.outlets[0]!;
    assert.equal(o.label, "");
    assert.equal(o.displayName, "Outlet 1");
    assert.equal(o.poaAction, null);
    assert.deepEqual(o.alarm, { state: "none", severity: "alarm", raised: false });
    assert.deepEqual(
      o.measurements.map((m) => [m.type, m.units, m.alarm?.severity, m.alarm?.raised]),
      [["realPower", "", "", true]],
    );
    assert.equal(d.outlets[1], base.outlets[1], "an outlet within bounds is the same object");
    assert.deepEqual(
      d.entities.map((e) => [e.key, e.label, e.displayName]),
      [["phase0", "", "Phase"]],
    );
    const list = problems(bounded).join("\n");
    for (const expected of [
      /devices\."DEV"\.label: label of 300000 characters is longer than 256; read as blank/,
      /devices\."DEV"\.outlets\[0\]\.label: label of 300000 characters/,
      /devices\."DEV"\.outlets\[0\]\.measurements\[1\]: measurement type of 257 characters .* left out/,
      /devices\."DEV"\.outlets\[0\]\.measurements\."realPower"\.units: units of 33 characters is longer than 32/,
      /devices\."DEV"\.entities\[1\]: entity key of 257 characters is longer than 256; the entity is left out/,
      /^system\.model: model of 1000 characters/m,
    ])
      assert.match(list, expected);
  });

  it("leaves out an over-long group key, and from the groups the outlets of a device left out", () => {
    const c = cluster("c", "MASTER", "MEMBER");
    const member = c.devices.find((d) => d.id === "MEMBER")!;
    const hugeId = long(PDU_BOUNDS.idChars + 1, "M");
    const devices = c.devices.map((d) => (d === member ? { ...d, id: hugeId } : d));
    const groups = [
      ...c.groups.map((g) => ({
        ...g,
        members: g.members.map((m) => (m.deviceId === "MEMBER" ? { ...m, deviceId: hugeId } : m)),
      })),
      group(long(PDU_BOUNDS.idChars + 1, "g"), "", [], []),
    ];
    const bounded = check({ ...c, devices, groups });
    assert.deepEqual(
      bounded.groups.map((g) => g.key),
      c.groups.map((g) => g.key),
    );
    for (const g of bounded.groups)
      assert.ok(
        g.members.every((m) => m.deviceId === "MASTER"),
        g.key,
      );
    assert.ok(bounded.groups.some((g) => g.members.length > 0));
  });

  it("refuses an answer with a count over a bound, naming it", () => {
    const cases: [string, Snapshot, RegExp][] = [
      [
        "devices",
        snapshot(
          "lab",
          Array.from({ length: PDU_BOUNDS.devices + 1 }, (_, i) => device({ id: `D${i}`, outlets: [] })),
        ),
        /devices in the answer: 257, more than 256/,
      ],
      [
        "outlets of a device",
        singleUnit("lab", "DEV", PDU_BOUNDS.outletsPerDevice + 1),
        /outlets on device "DEV": 257/,
      ],
      [
        "outlets of an answer",
        snapshot(
          "lab",
          Array.from({ length: 17 }, (_, d) =>
            device({ id: `D${d}`, outlets: Array.from({ length: 250 }, (_, i) => outlet(i)) }),
          ),
        ),
        /outlets in the answer: 4250, more than 4096/,
      ],
      [
        "measurements of an outlet",
        snapshot("lab", [
          device({
            id: "DEV",
            outlets: [
              {
                ...outlet(0),
                measurements: Array.from({ length: 65 }, (_, i) => measurement(`m${i}`, 1, "W")),
              },
            ],
          }),
        ]),
        /measurements of an outlet on device "DEV": 65, more than 64/,
      ],
    ];
    for (const [what, s, message] of cases) {
      assert.throws(
        () => check(s),
        (e: unknown) => e instanceof BoundsError && message.test(e.message),
        what,
      );
    }
  });

  it("never passes a snapshot with any one id, text, count or warning over its bound as it is", () => {
    const over = (n: number) => long(n + 1);
    const id = over(PDU_BOUNDS.idChars);
    const text = over(PDU_BOUNDS.textChars);
    const units = over(PDU_BOUNDS.unitsChars);
    const base = cluster("c", "MASTER", "MEMBER");
    const [master, member] = base.devices as [Device, Device];
    const o = master.outlets[0]!;
    const e = master.entities[0]!;
    const g = base.groups[0]!;
    const m = o.measurements[0]!;
    const gm = g.measurements[0]!;
    const raised = { state: "alarm", severity: "warning", raised: true };
    const withDevice = (d: Partial<Device>): Snapshot => ({
      ...base,
      devices: [{ ...master, ...d }, member],
    });
    const withOutlet = (x: Partial<Outlet>) => withDevice({ outlets: [{ ...o, ...x }, master.outlets[1]!] });
    const withEntity = (x: Partial<Entity>) => withDevice({ entities: [{ ...e, ...x }] });
    const withGroup = (x: Partial<Group>): Snapshot => ({ ...base, groups: [{ ...g, ...x }] });
    const many = (n: number) => Array.from({ length: n }, (_, i) => measurement(`m${i}`, 1, "W"));
    const warning = (path: string, problem: string) => ({ path, problem });
    const cases: [string, Snapshot][] = [
      ["device id", withDevice({ id })],
      ...(["name", "label", "displayName", "type", "state"] as const).map((f): [string, Snapshot] => [
        `device ${f}`,
        withDevice({ [f]: text }),
      ]),
      ["device alarm state", withDevice({ alarm: { ...raised, state: text } })],
      ["device alarm severity", withDevice({ alarm: { ...raised, severity: text } })],
      ["device system model", withDevice({ system: { ...master.system, model: text } })],
      ["snapshot system serial", { ...base, system: { ...base.system, serialNumber: text } }],
      ["outlets of a device", withDevice({ outlets: Array.from({ length: 257 }, (_, i) => outlet(i)) })],
      ["entities of a device", withDevice({ entities: Array.from({ length: 257 }, () => e) })],
      ...(["name", "label", "displayName", "poaAction"] as const).map((f): [string, Snapshot] => [
        `outlet ${f}`,
        withOutlet({ [f]: text }),
      ]),
      ["outlet index", withOutlet({ index: -1 })],
      ["outlet alarm", withOutlet({ alarm: { ...raised, state: text } })],
      ["outlet measurement type", withOutlet({ measurements: [{ ...m, type: id }] })],
      ["outlet measurement units", withOutlet({ measurements: [{ ...m, units }] })],
      [
        "outlet measurement alarm",
        withOutlet({ measurements: [{ ...m, alarm: { ...raised, severity: text } }] }),
      ],
      ["measurements of an outlet", withOutlet({ measurements: many(65) })],
      ["entity key", withEntity({ key: id })],
      ...(["name", "label", "displayName"] as const).map((f): [string, Snapshot] => [
        `entity ${f}`,
        withEntity({ [f]: text }),
      ]),
      ["entity alarm", withEntity({ alarm: { ...raised, severity: text } })],
      ["entity measurement units", withEntity({ measurements: [{ ...m, units }] })],
      ["measurements of an entity", withEntity({ measurements: many(65) })],
      ["group key", withGroup({ key: id })],
      ...(["name", "label", "displayName", "state"] as const).map((f): [string, Snapshot] => [
        `group ${f}`,
        withGroup({ [f]: text }),
      ]),
      ["rollup key", withGroup({ measurements: [{ ...gm, key: id }] })],
      ["rollup type", withGroup({ measurements: [{ ...gm, type: id }] })],
      ["rollup units", withGroup({ measurements: [{ ...gm, units }] })],
      ["warnings", { ...base, warnings: Array.from({ length: 21 }, (_, i) => warning(`$.x${i}`, "odd")) }],
      ["warning path", { ...base, warnings: [warning(long(301), "odd")] }],
      ["warning problem", { ...base, warnings: [warning("$.x", long(501))] }],
    ];
    assert.equal(check(base), base, "the snapshot they change passes as it is");
    for (const [what, s] of cases) {
      let out: Snapshot | BoundsError;
      try {
        out = check(s);
      } catch (error) {
        out = error as BoundsError;
      }
      assert.ok(out instanceof BoundsError || out !== s, `${what} over its bound passed as it is`);
    }
  });

  it("keeps at most the bounded number of warnings, the last counting the rest", () => {
    const outlets = Array.from({ length: 40 }, (_, i) => outlet(i, { label: long(300) }));
    const bounded = check(snapshot("lab", [device({ id: "DEV", outlets })]));
    const warnings = bounded.warnings ?? [];
    assert.equal(warnings.length, PDU_BOUNDS.warnings);
    assert.match(warnings.at(-1)!.problem, /\(and 20 more\)$/);
  });

  it("does not walk a restamped snapshot again: passed, bounded or refused", () => {
    let reads = 0;
    const counted = (s: Snapshot): Snapshot => {
      const devices = new Proxy(s.devices, {
        get(target, key, receiver) {
          reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
      return Object.freeze({ ...s, devices });
    };
    for (const raw of [
      counted(singleUnit("lab", "DEV", 3)),
      counted(snapshot("lab", [device({ id: "DEV", label: long(9999), outlets: [outlet(0)] })])),
      counted(singleUnit("lab", long(9999), 1)),
    ]) {
      const bounds = new SnapshotBounds();
      let first: Snapshot | BoundsError;
      try {
        first = bounds.apply(raw);
      } catch (e) {
        first = e as BoundsError;
      }
      assert.ok(reads > 0);
      reads = 0;
      const again = restamp(raw, raw.timestamp + 1000);
      let second: Snapshot | BoundsError;
      try {
        second = bounds.apply(again);
      } catch (e) {
        second = e as BoundsError;
      }
      assert.equal(reads, 0, "the restamped snapshot was not walked");
      if (first instanceof BoundsError) assert.equal(second, first, "the same refusal");
      else {
        assert.ok(!(second instanceof BoundsError));
        assert.equal(second.timestamp, raw.timestamp + 1000);
        assert.equal(second.devices, first.devices, "the same parts: the content is unchanged");
        assert.equal(second.warnings, first.warnings);
      }
    }
  });
});
