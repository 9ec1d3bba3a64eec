/**
 * The lease seam's contract as tests, run against every engine (test/cluster/etcd-store.test.ts,
 * test/cluster/kubernetes-store.test.ts): two clients of one installation, each its own store, so
 * that what one writes the other must see, and conditional writes must exclude each other.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  LeaseConflictError,
  type LeaseEvent,
  type LeaseRecord,
  type LeaseStore,
} from "../src/cluster/store.js";
import { waitFor } from "./wait.js";

export interface ContractSetup {
  /** Two clients of the same installation (same prefix), each with its own connections. */
  readonly a: LeaseStore;
  readonly b: LeaseStore;
  close(): Promise<void>;
}

export const record = (holder: string, extra: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holder,
  durationSeconds: 15,
  acquireTime: "2026-01-02T03:04:05.123456Z",
  renewTime: "2026-01-02T03:04:06.654321Z",
  transitions: 0,
  payload: "{}",
  ...extra,
});

const signal = () => AbortSignal.timeout(10_000);

/**
 * A record with its times as instants in milliseconds: they are for people, and engines keep them
 * at their own precision (a Kubernetes MicroTime from a JavaScript Date has whole milliseconds).
 */
export const comparable = (r: LeaseRecord | null | undefined) =>
  r === null || r === undefined
    ? r
    : {
        ...r,
        acquireTime: r.acquireTime === null ? null : Math.floor(Date.parse(r.acquireTime)),
        renewTime: r.renewTime === null ? null : Math.floor(Date.parse(r.renewTime)),
      };

export function leaseStoreContract(engine: string, setup: () => Promise<ContractSetup>): void {
  describe(`the LeaseStore contract on ${engine}`, () => {
    let s: ContractSetup;
    before(async () => {
      s = await setup();
    });
    after(async () => {
      await s.close();
    });

    it("get of a lease that does not exist is null; create makes it, once", async () => {
      assert.equal(await s.a.get("contract-create", signal()), null);
      const created = await s.a.create("contract-create", record("alpha/1"), signal());
      assert.equal(created.name, "contract-create");
      assert.deepEqual(comparable(created.record), comparable(record("alpha/1")));
      const read = await s.b.get("contract-create", signal());
      assert.equal(read?.version, created.version, "the other client reads the same version");
      assert.deepEqual(comparable(read?.record), comparable(created.record), "and what was written");
      await assert.rejects(s.b.create("contract-create", record("beta/1"), signal()), LeaseConflictError);
      assert.deepEqual((await s.a.get("contract-create", signal()))?.record?.holder, "alpha/1");
    });

    it("update succeeds only on the version last seen; the loser gets a conflict", async () => {
      const created = await s.a.create("contract-update", record("alpha/1"), signal());
      const updated = await s.a.update(
        "contract-update",
        record("alpha/1", { transitions: 1, payload: '{"ready":true}' }),
        created.version,
        signal(),
      );
      assert.notEqual(updated.version, created.version);
      await assert.rejects(
        s.b.update("contract-update", record("beta/1"), created.version, signal()),
        LeaseConflictError,
      );
      const read = await s.b.get("contract-update", signal());
      assert.deepEqual(
        comparable(read?.record),
        comparable(record("alpha/1", { transitions: 1, payload: '{"ready":true}' })),
      );
      assert.equal(read?.version, updated.version);
      await assert.rejects(
        s.a.update("contract-missing", record("alpha/1"), updated.version, signal()),
        LeaseConflictError,
        "an update of a lease that does not exist is a conflict",
      );
    });

    it("two clients updating the same version at once: exactly one wins", async () => {
      const created = await s.a.create("contract-race", record(""), signal());
      for (let round = 0; round < 5; round++) {
        const current = (await s.a.get("contract-race", signal()))!;
        const results = await Promise.allSettled([
          s.a.update("contract-race", record("alpha/1", { transitions: round }), current.version, signal()),
          s.b.update("contract-race", record("beta/1", { transitions: round }), current.version, signal()),
        ]);
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r) => r.status === "rejected");
        assert.equal(won.length, 1, `round ${round}: ${JSON.stringify(results)}`);
        assert.ok(lost[0]!.reason instanceof LeaseConflictError, String(lost[0]!.reason));
        const stored = (await s.b.get("contract-race", signal()))!;
        assert.equal(stored.version, won[0]!.value.version);
        assert.equal(stored.record?.holder, won[0]!.value.record?.holder);
      }
      assert.notEqual(created.version, "");
    });

    it("delete needs the current version; a lease already gone is no error", async () => {
      const created = await s.a.create("contract-delete", record("alpha/1"), signal());
      const updated = await s.a.update("contract-delete", record("alpha/1"), created.version, signal());
      await assert.rejects(s.b.delete("contract-delete", created.version, signal()), LeaseConflictError);
      await s.b.delete("contract-delete", updated.version, signal());
      assert.equal(await s.a.get("contract-delete", signal()), null);
      await s.a.delete("contract-delete", updated.version, signal());
    });

    it("records round-trip: empty holder, null times, payload text", async () => {
      const bare = record("", {
        acquireTime: null,
        renewTime: null,
        transitions: 7,
        payload: '{"once":["a-1"]}',
      });
      await s.a.create("contract-bare", bare, signal());
      assert.deepEqual(comparable((await s.b.get("contract-bare", signal()))?.record), comparable(bare));
    });

    it("list returns every lease of the installation with its version", async () => {
      const list = await s.b.list(signal());
      assert.equal(typeof list.revision, "string");
      const names = list.leases.map((l) => l.name).sort();
      for (const name of ["contract-bare", "contract-create", "contract-race", "contract-update"]) {
        assert.ok(names.includes(name), `${name} in ${names.join()}`);
      }
      assert.equal(names.includes("contract-delete"), false);
      const update = list.leases.find((l) => l.name === "contract-update")!;
      assert.equal(update.version, (await s.a.get("contract-update", signal()))?.version);
    });

    it("watch from a list's revision sees later puts and deletes, in order, with their versions", async () => {
      const list = await s.a.list(signal());
      const events: LeaseEvent[] = [];
      let ended: Error | null = null;
      const watch = s.a.watch(
        list.revision,
        (e) => events.push(e),
        (e) => (ended = e),
      );
      try {
        // A watch may take a moment to be in place; what happens after the revision is never missed.
        const created = await s.b.create("contract-watch", record("beta/1"), signal());
        const updated = await s.b.update(
          "contract-watch",
          record("beta/1", { transitions: 1 }),
          created.version,
          signal(),
        );
        await s.b.delete("contract-watch", updated.version, signal());
        await waitFor(
          () =>
            events.filter((e) => (e.type === "put" ? e.lease.name : e.name) === "contract-watch").length >= 3,
          "three watch events",
        );
        const mine = events.filter((e) => (e.type === "put" ? e.lease.name : e.name) === "contract-watch");
        assert.deepEqual(
          mine.map((e) =>
            e.type === "put" ? [e.type, e.lease.version, e.lease.record?.transitions] : [e.type],
          ),
          [["put", created.version, 0], ["put", updated.version, 1], ["delete"]],
        );
        assert.equal(ended, null);
      } finally {
        watch.close();
      }
    });
  });
}
