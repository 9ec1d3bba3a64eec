import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AssetBook } from "../../src/assets/book.js";
import { protectedConflicts, protectedDetail } from "../../src/assets/protect.js";
import { assetModel, pduSnapshot, readingOf, type OutletSpec } from "../../testkit/asset-fleet.js";

const model = assetModel(
  {
    db: {
      Cords: [
        { Instance: "pa", Outlet: 0 },
        { Instance: "pb", Device: "B1", Outlet: 0 },
      ],
      Protected: true,
    },
    app: {
      Cords: [
        { Instance: "pa", Outlet: 1 },
        { Instance: "pb", Device: "B1", Outlet: 1 },
      ],
    },
    solo: { Cords: [{ Instance: "pa", Outlet: 2 }], Protected: true },
  },
  { pa: { Feed: "A" }, pb: { Feed: "B" } },
  ["A", "B"],
);

const ON: OutletSpec = { state: "on", current: 1 };
const OFF: OutletSpec = { state: "off", current: 0 };

function book(a: readonly OutletSpec[], b: readonly OutletSpec[] | null, bOnline = true): AssetBook {
  const assets = new AssetBook(model);
  assets.update(readingOf(pduSnapshot("pa", [{ id: "A1", outlets: a }])), true, 1);
  if (b !== null) assets.update(readingOf(pduSnapshot("pb", [{ id: "B1", outlets: b }]), bOnline), true, 1);
  return assets;
}

const offA = (index: number) => ({ instance: "pa", deviceId: "A1", index });
const offB = (index: number) => ({ instance: "pb", deviceId: "B1", index });

describe("the protected-asset rule", () => {
  it("allows an off that leaves a protected asset a live cord", () => {
    assert.deepEqual(protectedConflicts(book([ON, ON, ON], [ON, ON]), [offA(0)]), []);
    assert.deepEqual(
      protectedConflicts(book([ON, ON, ON], [ON, ON]), [offA(1), offB(1)]),
      [],
      "app is not protected",
    );
  });

  it("refuses cutting the last live cord, naming the asset and its other cords' states", () => {
    const assets = book([ON, ON, ON], [OFF, ON]);
    const conflicts = protectedConflicts(assets, [offA(0)]);
    assert.equal(conflicts.length, 1);
    assert.equal(conflicts[0]!.asset.id, "db");
    assert.deepEqual(
      conflicts[0]!.cords.map((c) => [c.reading.status, c.targeted]),
      [
        ["live", true],
        ["off", false],
      ],
    );
    assert.match(
      protectedDetail("off on outlet A1/0 of instance pa", conflicts),
      /^off on outlet A1\/0 of instance pa was refused: protected asset db would be left with no live cord \(its other cords: pb\/B1 outlet 0 off\);.*nothing was sent$/,
    );
  });

  it("refuses both cords in one request (a group, an asset's off)", () => {
    const conflicts = protectedConflicts(book([ON, ON, ON], [ON, ON]), [offA(0), offB(0), offA(1)]);
    assert.deepEqual(
      conflicts.map((c) => c.asset.id),
      ["db"],
    );
    assert.match(protectedDetail("off", conflicts), /it has no other cord/);
  });

  it("does not count a cord whose PDU is offline, never polled, or whose state is unknown", () => {
    for (const [name, assets] of [
      ["offline", book([ON, ON, ON], [ON, ON], false)],
      ["never polled", book([ON, ON, ON], null)],
      ["state unknown", book([ON, ON, ON], [{ state: "unknown" }, ON])],
    ] as const) {
      const conflicts = protectedConflicts(assets, [offA(0)]);
      assert.deepEqual(
        conflicts.map((c) => c.asset.id),
        ["db"],
        name,
      );
      assert.match(protectedDetail("off", conflicts), /pb\/?(B1)? outlet 0 unknown \(/, name);
    }
  });

  it("refuses cutting a cord whose state is unknown when no cord is known live", () => {
    const assets = book([{ state: "unknown" }, ON, ON], [OFF, ON]);
    assert.deepEqual(
      protectedConflicts(assets, [offA(0)]).map((c) => c.asset.id),
      ["db"],
      "an outlet in an unknown state may be what keeps it running",
    );
  });

  it("lets an off through that only writes cords known to be off, and a single-cord protected asset's is refused", () => {
    assert.deepEqual(protectedConflicts(book([OFF, ON, ON], [OFF, ON]), [offA(0), offB(0)]), []);
    assert.deepEqual(
      protectedConflicts(book([ON, ON, ON], [ON, ON]), [offA(2)]).map((c) => c.asset.id),
      ["solo"],
    );
  });

  it("ignores outlets that feed no asset", () => {
    assert.deepEqual(protectedConflicts(book([ON, ON, ON, ON], [ON, ON]), [offA(3), offB(7)]), []);
  });

  it("counts offs in flight as not live, never against a request that does not touch the asset", () => {
    const assets = book([ON, ON, ON], [ON, ON]);
    // db's second cord has an off in flight: its first cord is its last live one.
    const conflicts = protectedConflicts(assets, [offA(0)], [offB(0)]);
    assert.deepEqual(
      conflicts.map((c) => c.asset.id),
      ["db"],
    );
    assert.deepEqual(
      conflicts[0]!.cords.map((c) => [c.targeted, c.inFlight === true]),
      [
        [true, false],
        [false, true],
      ],
    );
    assert.match(protectedDetail("off", conflicts), /pb\/B1 outlet 0 on, an off of it in flight/);
    // Both of db's cords in flight: an off of app's cords does not touch db.
    assert.deepEqual(protectedConflicts(assets, [offA(1)], [offA(0), offB(0)]), []);
    // An off in flight of another outlet leaves db its live cord.
    assert.deepEqual(protectedConflicts(assets, [offA(0)], [offB(1)]), []);
  });
});
