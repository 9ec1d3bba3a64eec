/**
 * The overrides seam (src/pdu/overrides.ts) on model snapshots: what it changes and what it must
 * leave alone (the PDU's label, other instances' snapshots, keys that only look like overrides).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { InstanceOverrides } from "../../src/config/overrides.js";
import { applyOverrides, publishedView, unknownOverrides } from "../../src/pdu/overrides.js";
import { cluster } from "../../testkit/snapshot-builders.js";

const none = { Outlets: {}, Entities: {}, Groups: {} };
const instance = (
  o: Partial<InstanceOverrides["Overrides"]>,
  measurements?: string[],
): InstanceOverrides => ({
  id: "cl",
  Overrides: { ...none, ...o },
  ...(measurements === undefined ? {} : { Measurements: measurements }),
});

describe("applyOverrides", () => {
  const snap = cluster("cl", "MASTER", "MEMBER");

  it("returns the same snapshot when the instance configures nothing", () => {
    const same = applyOverrides(snap, instance({}));
    assert.equal(same, snap);
    assert.equal(publishedView(same), same);
  });

  it("renames and flags, keeping the PDU's label; groups match ignoring case", () => {
    const out = applyOverrides(
      snap,
      instance({
        Outlets: { MASTER: { "0": { Name: "core", Protected: true }, "1": { Hidden: true } } },
        Groups: { "2": { Name: "web", Protected: true }, TOTAL: { Hidden: true } },
      }),
    );
    const master = out.devices.find((d) => d.id === "MASTER")!;
    const o0 = master.outlets[0]!;
    assert.equal(o0.displayName, "core");
    assert.equal(o0.label, snap.devices.find((d) => d.id === "MASTER")!.outlets[0]!.label);
    assert.equal(o0.renamed, true);
    assert.equal(o0.protected, true);
    assert.equal(master.outlets[1]!.hidden, true);
    assert.equal(out.groups.find((g) => g.key === "2")?.displayName, "web");
    assert.equal(out.groups.find((g) => g.key === "total")?.hidden, true);
    // The member's outlets are untouched objects.
    assert.equal(
      out.devices.find((d) => d.id === "MEMBER"),
      snap.devices.find((d) => d.id === "MEMBER"),
    );
    // The published view leaves the hidden outlet and group out; the snapshot keeps them.
    const view = publishedView(out);
    assert.deepEqual(
      view.devices.find((d) => d.id === "MASTER")!.outlets.map((o) => o.index),
      [0],
    );
    assert.deepEqual(
      view.groups.map((g) => g.key),
      ["2"],
    );
    assert.equal(publishedView(out), view, "built once per snapshot");
    assert.equal(out.devices.find((d) => d.id === "MASTER")!.outlets.length, 2);
  });

  it("filters measurement types ignoring case, on outlets and group rollups", () => {
    const out = applyOverrides(snap, instance({}, ["REALPOWER"]));
    for (const d of out.devices) {
      for (const o of d.outlets)
        assert.deepEqual(
          o.measurements.map((m) => m.type),
          ["realPower"],
        );
    }
    const group2 = out.groups.find((g) => g.key === "2")!;
    assert.deepEqual(
      group2.measurements.map((m) => m.type),
      ["realPower"],
    );
  });

  it("never matches inherited object keys", () => {
    const weird = JSON.parse(
      '{"constructor": {"0": {"Hidden": true}}}',
    ) as InstanceOverrides["Overrides"]["Outlets"];
    const out = applyOverrides(snap, instance({ Outlets: weird }));
    assert.ok(out.devices.every((d) => d.outlets.every((o) => o.hidden !== true)));
  });
});

describe("unknownOverrides", () => {
  it("names devices, outlets and groups the snapshot does not have, and nothing else", () => {
    const snap = cluster("cl", "MASTER", "MEMBER");
    const problems = unknownOverrides(
      snap,
      instance({
        Outlets: {
          MASTER: { "0": { Hidden: true }, "5": { Hidden: true } },
          GONE: { "0": { Hidden: true } },
        },
        Groups: { "2": { Name: "x" }, "7": { Name: "y" } },
      }),
    );
    assert.deepEqual(
      problems.map((p) => p.split(":")[0]),
      ["Pdus.cl.Overrides.Outlets.MASTER.5", "Pdus.cl.Overrides.Outlets.GONE", "Pdus.cl.Overrides.Groups.7"],
    );
  });
});
