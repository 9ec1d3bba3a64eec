/**
 * A sequence's journal in real etcd (src/cluster/journal-store.ts), and a sequence resumed by
 * another runner: two runners (as two replicas would have, each with its own journal client and
 * identity) over one App's asset control and simulators; the first is halted halfway through and
 * declared dead, the second finds its head, takes it over with a conditional write and finishes it:
 * every asset ends on, every cord written exactly once (the simulators' write journals). Also the
 * journal store's own rules: conditional writes, names, records larger than a lease's payload.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { JOURNAL_PAYLOAD_MAX, journalPrefix } from "../../src/cluster/engines.js";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import { JournalStore } from "../../src/cluster/journal-store.js";
import { Sequences } from "../../src/control/sequences.js";
import type { JournalEntry } from "../../src/simulator/types.js";
import type { AssetConfig } from "../../src/assets/types.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { feedAssetBook, type FedBook } from "../../testkit/asset-book.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { waitFor } from "../../testkit/wait.js";

const ASSETS = 8;
const signal = (): AbortSignal => AbortSignal.timeout(10_000);

describe("sequences resumed from their journal in etcd", () => {
  let etcd: EtcdCluster;
  let h: AppHarness<"a" | "b">;
  let fed: FedBook;
  const stores: EtcdLeaseStore[] = [];
  /** The runner identities whose member lease is "held" (what the cluster would say). */
  const alive = new Set<string>();

  function journal(identity: string, prefix: string): JournalStore {
    const store = new EtcdLeaseStore({ endpoints: etcd.endpoints, prefix, maxPayload: JOURNAL_PAYLOAD_MAX });
    stores.push(store);
    alive.add(identity);
    const member = identity.split("/")[0]!;
    return new JournalStore(
      store,
      { identity, identityOf: (m) => (m === member && alive.has(identity) ? identity : null) },
      JOURNAL_PAYLOAD_MAX,
    );
  }

  before(async () => {
    etcd = await EtcdCluster.start({ members: 1 });
    h = await startAppHarness<"a" | "b">({
      sims: { a: { outlets: ASSETS }, b: { outlets: ASSETS, seed: 4 } },
      yaml: (s) =>
        appYaml({
          pdus: [
            pduYaml("a", s.a, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
            pduYaml("b", s.b, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
          ],
        }),
      waitForFirstPolls: true,
    });
    const assets: Record<string, AssetConfig> = {};
    for (let i = 0; i < ASSETS; i++)
      assets[`r-${i}`] = {
        StartSeconds: 1,
        Cords: [
          { Instance: "a", Outlet: i },
          { Instance: "b", Outlet: i },
        ],
      };
    fed = feedAssetBook(h.app, {
      Pdus: { a: {}, b: {} },
      Assets: assets,
      Sequences: { MaxConcurrentStarts: 2, GapSeconds: 0 },
    });
    await waitFor(() => fed.book.get("r-0")?.readings.every((r) => r.resolved), "cords resolved");
  });
  after(async () => {
    fed?.close();
    await h?.close();
    await Promise.allSettled(stores.map((s) => s.close()));
    await etcd?.close();
  });

  it("keeps records conditionally, beside the leases, larger than a lease's payload", async () => {
    const prefix = journalPrefix("/pdu-bridge/");
    assert.equal(prefix, "/pdu-bridge/~journal/");
    const records = journal("m1/aaa", prefix);
    const leases = new EtcdLeaseStore({ endpoints: etcd.endpoints, prefix: "/pdu-bridge/" });
    stores.push(leases);
    const big = "x".repeat(100_000);
    const created = await records.create("sequence-abc", big, signal());
    assert.notEqual(created, "conflict");
    assert.equal(await records.create("sequence-abc", "again", signal()), "conflict");
    const read = await records.get("sequence-abc", signal());
    assert.equal(read?.text, big);
    const updated = await records.update("sequence-abc", "two", read.version, signal());
    assert.notEqual(updated, "conflict");
    assert.equal(await records.update("sequence-abc", "stale", read.version, signal()), "conflict");
    assert.deepEqual(await records.names(signal()), ["sequence-abc"]);
    // Within the leases' prefix (one etcd role grants both), yet never in the elector's list.
    assert.deepEqual((await leases.list(signal())).leases, []);
    assert.equal(records.alive("m1/aaa"), true);
    assert.equal(records.alive("m2/bbb"), false);
  });

  it("a runner halted halfway is resumed by another; every cord written exactly once", async () => {
    const prefix = "/resume-journal/";
    const first = new Sequences({
      config: () => h.app.config,
      records: journal("r1/one", prefix),
      control: h.app.assetControl,
      logger: h.log.logger,
      scanMs: null,
    });
    const second = new Sequences({
      config: () => h.app.config,
      records: journal("r2/two", prefix),
      control: h.app.assetControl,
      logger: h.log.logger,
      scanMs: 100,
    });
    try {
      // Every asset off first, so that the on sequence writes every cord.
      for (let i = 0; i < ASSETS; i++) {
        const off = await h.app.assetControl.execute({
          assetId: `r-${i}`,
          action: "off",
          source: { surface: "rest", client: "test" },
        });
        assert.equal(off.outcome, "executed", off.detail);
      }
      const since = [h.sims.a.journal().length, h.sims.b.journal().length] as const;
      const writes = (): JournalEntry[] => [
        ...h.sims.a.journal().slice(since[0]),
        ...h.sims.b.journal().slice(since[1]),
      ];
      const started = await first.start(
        { action: "on", assets: "all", dryRun: false },
        { surface: "rest", client: "test" },
      );
      assert.equal(started.status, 202, JSON.stringify(started));
      const { id } = (started as { body: { id: string } }).body;
      // Halfway: two of the four waves written, then the first runner stops dead.
      await waitFor(() => writes().length >= ASSETS, "half of the cords written", 30_000);
      await first.close();
      alive.delete("r1/one");
      second.watch();
      second.scanSoon();
      await waitFor(
        async () => {
          const progress = await second.progress(id);
          return progress.ok && (progress.body as { state: string }).state === "done";
        },
        "the sequence done by the second runner",
        60_000,
      );
      const progress = (await second.progress(id)) as {
        body: { runner: string; assets: { outcome: string }[] };
      };
      assert.equal(progress.body.runner, "r2/two");
      assert.ok(
        progress.body.assets.every((a) => a.outcome === "executed"),
        JSON.stringify(progress.body),
      );
      const a = h.sims.a
        .journal()
        .slice(since[0])
        .map((w) => w.path);
      const b = h.sims.b
        .journal()
        .slice(since[1])
        .map((w) => w.path);
      assert.equal(new Set(a).size, ASSETS, "every cord on a written");
      assert.equal(new Set(b).size, ASSETS, "every cord on b written");
      assert.equal(a.length + b.length, ASSETS * 2, "each cord written exactly once");
      assert.ok(writes().every((w) => w.data.action === "on"));
      for (let i = 0; i < ASSETS; i++) {
        assert.equal(h.sims.a.outlet(h.sims.a.deviceIds()[0]!, i).state, "on");
        assert.equal(h.sims.b.outlet(h.sims.b.deviceIds()[0]!, i).state, "on");
      }
    } finally {
      await first.close();
      await second.close();
    }
  });
});
