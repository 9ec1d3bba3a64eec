/**
 * The incremental book against a from-scratch computation: random fleets (instances of one or two
 * devices, assets of one to three cords, some of them naming a device, some an outlet that is not
 * there), random snapshots in random orders (outlets on, off or unknown, currents, PDUs online or
 * not, polls and latch-made snapshots). After every update each asset's state equals the one
 * computed over the latest readings of every instance, its redundancy equals an independent
 * count of polls, the assets without a cord on the updated instance are not touched, and the
 * update says moved (and gives another version to) exactly the assets whose state moved.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { AssetBook } from "../../src/assets/book.js";
import { buildAssetModel } from "../../src/assets/model.js";
import {
  assetState,
  plainReading,
  readAsset,
  type AssetState,
  type CordReading,
  type InstanceReading,
} from "../../src/assets/state.js";
import type { AssetConfig, AssetModel } from "../../src/assets/types.js";
import { restamp } from "../../src/pdu/model.js";
import { pduSnapshot, type OutletSpec } from "../../testkit/asset-fleet.js";

const INSTANCES = ["p0", "p1", "p2", "p3"];

const outletArb: fc.Arbitrary<OutletSpec> = fc.record({
  state: fc.constantFrom<"on" | "off" | "unknown">("on", "on", "off", "unknown"),
  current: fc.oneof(fc.constant(null), fc.double({ min: 0, max: 8, noNaN: true })),
  power: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 2000 })),
  energy: fc.oneof(fc.constant(undefined), fc.integer({ min: 0, max: 10_000 })),
});

const updateArb = fc.record({
  instance: fc.constantFrom(...INSTANCES),
  devices: fc.array(fc.array(outletArb, { maxLength: 4 }), { minLength: 1, maxLength: 2 }),
  online: fc.boolean(),
  poll: fc.boolean(),
  /** The instance's last snapshot again, restamped (a PDU's answer byte for byte the last one). */
  repeat: fc.boolean(),
});

const cordArb = fc.record({
  Instance: fc.constantFrom(...INSTANCES),
  Device: fc.constantFrom(undefined, "d0", "d1", "dx"),
  Outlet: fc.integer({ min: 0, max: 4 }),
});

const fleetArb = fc.record({
  assets: fc.array(fc.array(cordArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 8 }),
  feeds: fc.array(fc.constantFrom("A", "B"), { minLength: INSTANCES.length, maxLength: INSTANCES.length }),
  updates: fc.array(updateArb, { minLength: 1, maxLength: 40 }),
});

interface CordSpec {
  readonly Instance: string;
  readonly Device: string | undefined;
  readonly Outlet: number;
}

function modelOf(assets: readonly (readonly CordSpec[])[], feeds: readonly string[]): AssetModel {
  const configs: Record<string, AssetConfig> = {};
  assets.forEach((cords, i) => {
    configs[`a${i}`] = {
      Cords: cords.map((c) => ({
        Instance: c.Instance,
        Outlet: c.Outlet,
        ...(c.Device === undefined ? {} : { Device: c.Device }),
      })),
      Protected: i % 2 === 0,
    };
  });
  // Assets that repeat an outlet are left out by the model, as the configuration would refuse them.
  return buildAssetModel({
    Assets: configs,
    Feeds: { A: {}, B: {} },
    Pdus: Object.fromEntries(INSTANCES.map((id, i) => [id, { Feed: feeds[i]! }])),
  }).model;
}

/** The rule of a cord being down, written again from the contract's words. */
function downNow(readings: readonly CordReading[], r: CordReading): boolean {
  if (readings.every((x) => x.status === "off")) return false;
  if (r.status !== "live") return true;
  const live = readings.filter((x) => x.status === "live");
  if (live.some((x) => x.current === null)) return false;
  const total = live.reduce((s, x) => s + x.current!, 0);
  return total >= 0.5 && r.current! < 0.05 * total;
}

/**
 * A state as it is now, in plain objects with every field (the book's are written in place at its
 * next update, and their figures are getters, which a spread leaves out).
 */
function copyOf(state: AssetState): AssetState {
  return {
    id: state.id,
    state: state.state,
    power: state.power,
    current: state.current,
    energy: state.energy,
    energyLifetime: state.energyLifetime,
    cordsLive: state.cordsLive,
    cords: state.cords,
    redundancy: state.redundancy,
    readings: state.readings.map(plainReading),
    changed: state.changed,
  };
}

describe("the asset book, incrementally and from scratch", () => {
  it("agrees after every update, and touches only the assets on the updated instance", () => {
    fc.assert(
      fc.property(fleetArb, ({ assets, feeds, updates }) => {
        const model = modelOf(assets, feeds);
        const book = new AssetBook(model);
        const readings = new Map<string, InstanceReading>();
        /** asset id → per cord: [bad polls in a row, good polls in a row, down] */
        const streaks = new Map(
          [...model.assets.values()].map((a) => [
            a.id,
            a.cords.map(() => ({ bad: 0, good: 0, down: false })),
          ]),
        );
        let t = 0;
        for (const u of updates) {
          t++;
          const last = readings.get(u.instance)?.snapshot;
          const snapshot =
            u.repeat && last !== undefined && last !== null
              ? restamp(last, t)
              : pduSnapshot(
                  u.instance,
                  u.devices.map((outlets, i) => ({ id: `d${i}`, outlets })),
                  t,
                );
          const reading: InstanceReading = { id: u.instance, snapshot, online: u.online };
          // The book writes its states in place: what each was before, copied, and its version.
          const before = new Map([...book.states()].map((s) => [s.id, copyOf(s)]));
          const versions = new Map([...model.assets.keys()].map((id) => [id, book.version(id)]));
          const { moved } = book.update(reading, u.poll, t);
          readings.set(u.instance, reading);
          for (const asset of model.assets.values()) {
            const scratch = readAsset(model, asset, readings);
            const onIt = asset.cords.some((c) => c.instance === u.instance);
            if (u.poll && onIt) {
              asset.cords.forEach((c, i) => {
                if (c.instance !== u.instance) return;
                const s = streaks.get(asset.id)![i]!;
                if (downNow(scratch, scratch[i]!)) {
                  s.bad++;
                  s.good = 0;
                  if (s.bad >= 2) s.down = true;
                } else {
                  s.good++;
                  s.bad = 0;
                  if (s.good >= 2) s.down = false;
                }
              });
            }
            const expectedRedundancy =
              asset.cords.length === 1
                ? "single"
                : streaks.get(asset.id)!.some((s) => s.down)
                  ? "lost"
                  : "ok";
            const expected = assetState(asset, scratch, expectedRedundancy, null);
            const got = book.get(asset.id)!;
            const same = isDeepStrictEqual(
              { ...copyOf(got), changed: null },
              { ...before.get(asset.id)!, changed: null },
            );
            if (!onIt) {
              assert.ok(same, `${asset.id} is not on ${u.instance}: untouched`);
              assert.equal(book.version(asset.id), versions.get(asset.id), `${asset.id}: its version kept`);
            }
            // Whoever keeps a version (the MQTT topics) must learn of every move, and of no other.
            assert.equal(
              moved.includes(asset.id),
              !same,
              `${asset.id} ${same ? "did not move but is" : "moved but is not"} said moved`,
            );
            assert.equal(book.version(asset.id) !== versions.get(asset.id), !same, `${asset.id}: version`);
            assert.deepEqual(
              { ...copyOf(got), changed: null },
              { ...copyOf(expected), changed: null },
              `${asset.id} after update ${t} (${u.instance})`,
            );
          }
          const lost = [...book.states()]
            .filter((s) => s.redundancy === "lost")
            .map((s) => `${s.id}/asset/redundancy`);
          assert.deepEqual(
            book
              .alarms()
              .map((a) => a.id)
              .sort(),
            lost.sort(),
          );
        }
      }),
      { numRuns: 300 },
    );
  });

  it("indexes each resolved cord under its outlet, and forgets it when it no longer resolves", () => {
    fc.assert(
      fc.property(fleetArb, ({ assets, feeds, updates }) => {
        const model = modelOf(assets, feeds);
        const book = new AssetBook(model);
        for (const [t, u] of updates.entries()) {
          const snapshot = pduSnapshot(
            u.instance,
            u.devices.map((outlets, i) => ({ id: `d${i}`, outlets })),
            t,
          );
          book.update({ id: u.instance, snapshot, online: u.online }, u.poll, t);
        }
        for (const state of book.states()) {
          const asset = model.assets.get(state.id)!;
          state.readings.forEach((r, i) => {
            const refs = r.resolved ? book.cordsAt(r.instance, r.deviceId!, r.index) : [];
            if (r.resolved)
              assert.ok(
                refs.some((x) => x.asset === asset && x.cord === i),
                `${state.id} cord ${i} indexed`,
              );
          });
        }
        for (const instance of INSTANCES)
          for (const device of ["d0", "d1", "dx"])
            for (let index = 0; index <= 4; index++)
              for (const ref of book.cordsAt(instance, device, index)) {
                const r = book.get(ref.asset.id)!.readings[ref.cord]!;
                assert.ok(
                  r.resolved && r.instance === instance && r.deviceId === device && r.index === index,
                );
              }
      }),
      { numRuns: 200 },
    );
  });
});
