/**
 * The book writes each asset's state in place and gives it another version at each update that
 * moved it (src/assets/book.ts): whoever keeps a version (the MQTT topics) does nothing for an asset
 * whose version did not move. So every move must show: one cord's figure while the other cord reads
 * the same, redundancy lost on a poll whose answer is the last one again, a cord whose outlet goes
 * unknown or away, a definition changed live. And nothing else must: the other assets of the
 * instance, and an answer with the same figures.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AssetBook } from "../../src/assets/book.js";
import type { InstanceReading } from "../../src/assets/state.js";
import { restamp } from "../../src/pdu/model.js";
import { assetModel, pduSnapshot, readingOf, type OutletSpec } from "../../testkit/asset-fleet.js";

const on = (current: number, power = current * 230): OutletSpec => ({
  state: "on",
  current,
  power,
  energy: 10,
});

const ASSETS = {
  db: {
    Cords: [
      { Instance: "pa", Outlet: 0 },
      { Instance: "pb", Outlet: 0 },
    ],
  },
  web: {
    Cords: [
      { Instance: "pa", Outlet: 1 },
      { Instance: "pb", Outlet: 1 },
    ],
  },
};
const PDUS = { pa: { Feed: "A" }, pb: { Feed: "B" } };
const model = assetModel(ASSETS, PDUS, ["A", "B"]);

const pa = (db: OutletSpec, web: OutletSpec = on(1), t = 1_000): InstanceReading =>
  readingOf(pduSnapshot("pa", [{ id: "A1", outlets: [db, web] }], t));
const pb = (db: OutletSpec, web: OutletSpec = on(1), t = 1_000): InstanceReading =>
  readingOf(pduSnapshot("pb", [{ id: "B1", outlets: [db, web] }], t));

/** A book with both PDUs polled twice with every outlet on. */
function polledBook(): AssetBook {
  const book = new AssetBook(model);
  for (let t = 1; t <= 2; t++) {
    book.update(pa(on(1)), true, t);
    book.update(pb(on(1)), true, t);
  }
  return book;
}

describe("the book in place: every move shows, in the state, the update and the version", () => {
  it("one cord's figures move while the other cord's are equal: sums and version move, the other asset's do not", () => {
    const book = polledBook();
    const db0 = book.version("db");
    const web0 = book.version("web");
    assert.equal(book.get("db")!.power, 460);
    const { moved } = book.update(pa(on(1.5)), true, 3);
    assert.deepEqual(moved, ["db"]);
    const db = book.get("db")!;
    assert.equal(db.power, 1.5 * 230 + 230);
    assert.equal(db.current, 2.5);
    assert.equal(db.readings[0]!.current, 1.5);
    assert.equal(db.readings[1]!.current, 1, "the cord on pb as it was");
    assert.notEqual(book.version("db"), db0);
    assert.equal(book.version("web"), web0, "web read the same on pa: no new version");
    // The same figures in a new answer (not a restamp): nothing moves.
    const db1 = book.version("db");
    const again = book.update(pa(on(1.5), on(1), 4_000), true, 4);
    assert.deepEqual(again.moved, []);
    assert.equal(book.version("db"), db1);
  });

  it("redundancy lost on a poll that reads the same as the last: the version moves with it", () => {
    const book = polledBook();
    // pa's cord of db draws under 5 % of db's current while pb's carries it.
    const weak = pa(on(0.01));
    book.update(pb(on(2)), true, 3);
    book.update(weak, true, 3);
    assert.equal(book.get("db")!.redundancy, "ok", "one poll is not enough");
    const before = book.version("db");
    // pa answers byte for byte the same: its driver restamps the last snapshot.
    const { moved, alarmChanges } = book.update(
      { ...weak, snapshot: restamp(weak.snapshot!, 4_000) },
      true,
      4,
    );
    assert.equal(book.get("db")!.redundancy, "lost");
    assert.equal(book.get("db")!.changed, true);
    assert.deepEqual(moved, ["db"]);
    assert.notEqual(book.version("db"), before);
    assert.deepEqual(
      alarmChanges.map((c) => `${c.change} ${c.alarm.id}`),
      ["raised db/asset/redundancy"],
    );
  });

  it("a cord's outlet reported unknown, then gone from the answer, then back", () => {
    const book = polledBook();
    let v = book.version("db");
    const moves = (reading: InstanceReading, t: number): void => {
      const { moved } = book.update(reading, true, t);
      assert.ok(moved.includes("db"), `db moved at ${t}`);
      assert.notEqual(book.version("db"), v);
      v = book.version("db");
    };
    moves(pa({ state: "unknown", current: 1, power: 230, energy: 10 }), 3);
    let db = book.get("db")!;
    assert.equal(db.state, "unknown");
    assert.equal(db.readings[0]!.problem, "state-unknown");
    moves(readingOf(pduSnapshot("pa", [{ id: "A1", outlets: [] }], 4)), 4);
    db = book.get("db")!;
    assert.equal(db.readings[0]!.problem, "unknown-outlet");
    assert.equal(db.readings[0]!.resolved, false);
    assert.deepEqual(book.cordsAt("pa", "A1", 0), [], "the outlet index forgets it");
    moves(pa(on(1)), 5);
    db = book.get("db")!;
    assert.equal(db.state, "on");
    assert.equal(db.power, 460);
    assert.equal(book.cordsAt("pa", "A1", 0).length, 1);
    // Its PDU offline: the last snapshot's outlet, no figures.
    moves({ ...pa(on(1)), online: false }, 6);
    db = book.get("db")!;
    assert.equal(db.readings[0]!.problem, "offline");
    assert.equal(db.readings[0]!.outletState, "on");
    assert.equal(db.power, null);
  });

  it("a definition changed live: the new book reads the new cords, with versions no state had before", () => {
    const book = polledBook();
    book.update(pb(on(1), on(3)), true, 3);
    const old = [book.version("db"), book.version("web")];
    const next = assetModel(
      {
        ...ASSETS,
        db: {
          Cords: [
            { Instance: "pa", Outlet: 0 },
            { Instance: "pb", Outlet: 2 },
          ],
        },
      },
      PDUS,
      ["A", "B"],
    );
    // pb's outlet 2 exists in its next answer only.
    const { book: changed } = AssetBook.reconfigure(book, next, 4);
    assert.equal(changed.get("db")!.readings[1]!.problem, "unknown-outlet");
    changed.update(readingOf(pduSnapshot("pb", [{ id: "B1", outlets: [on(1), on(3), on(2)] }], 5)), true, 5);
    const db = changed.get("db")!;
    assert.equal(db.readings[1]!.index, 2);
    assert.equal(db.power, 230 + 460);
    assert.equal(changed.get("web")!.power, 230 + 690, "web kept its readings");
    for (const id of ["db", "web"]) assert.ok(!old.includes(changed.version(id)), `${id}: a new version`);
    assert.equal(book.get("db")!.readings[1]!.index, 0, "the book before is left as it was");
  });
});
