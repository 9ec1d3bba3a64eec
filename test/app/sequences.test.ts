/**
 * Power sequences through the composed App against simulators over real sockets: a dry run answers
 * the plan and sends nothing; a started sequence powers its assets on in priority order with at
 * most `MaxConcurrentStarts` assets within one start-up time of each other (read from the
 * simulators' write journals), every cord written exactly once, its progress readable until it is
 * done; an off sequence runs the other way round and leaves protected assets out; a stop asked
 * lets the wave in progress finish and starts no later one.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { SequenceEvent } from "../../src/bus.js";
import type { JournalEntry } from "../../src/simulator/types.js";
import type { AssetConfig } from "../../src/assets/types.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { feedAssetBook, type FedBook } from "../../testkit/asset-book.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "sequences-key-7d41c9";
const withKey = { "x-api-key": KEY };
const ASSETS = 12;
const START_SECONDS = 1;
const MAX_STARTS = 4;
/** s-00..s-03 priority 1, s-04..s-09 priority 2, s-10 and s-11 priority 3. */
const priorityOf = (i: number): number => (i < 4 ? 1 : i < 10 ? 2 : 3);
const assetId = (i: number): string => `s-${String(i).padStart(2, "0")}`;

interface Progress {
  state: string;
  assets: { id: string; wave: number; step: string; outcome: string | null }[];
}

describe("power sequences", () => {
  let h: AppHarness<"a" | "b">;
  let fed: FedBook;

  /** Writes to the simulators since `since`, each with the asset its outlet is a cord of. */
  function writesSince(since: readonly [number, number]): { asset: number; entry: JournalEntry }[] {
    const out: { asset: number; entry: JournalEntry }[] = [];
    for (const [k, sim] of [h.sims.a, h.sims.b].entries()) {
      for (const entry of sim.journal().slice(since[k])) {
        const index = /\/outlet\/(\d+)$/.exec(entry.path)?.[1];
        if (index !== undefined) out.push({ asset: Number(index), entry });
      }
    }
    return out.sort((x, y) => x.entry.time - y.entry.time);
  }
  const mark = (): [number, number] => [h.sims.a.journal().length, h.sims.b.journal().length];

  async function runToEnd(body: object): Promise<Progress> {
    const started = await h.api.post(`/api/v1/sequences`, body, withKey);
    assert.equal(started.status, 202, started.text);
    const { id } = started.json<{ id: string }>();
    let last: Progress | null = null;
    await waitFor(
      async () => {
        const res = await h.api.get(`/api/v1/sequences/${id}`);
        assert.equal(res.status, 200, res.text);
        last = res.json<Progress>();
        return last.state === "done" || last.state === "stopped";
      },
      `sequence ${id} ended`,
      60_000,
    );
    return last!;
  }

  before(async () => {
    h = await startAppHarness<"a" | "b">({
      sims: { a: { outlets: ASSETS + 3 }, b: { outlets: ASSETS + 3, seed: 3 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("a", s.a, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
            pduYaml("b", s.b, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
          ],
        }),
      waitForFirstPolls: true,
    });
    const assets: Record<string, AssetConfig> = {};
    for (let i = 0; i < ASSETS; i++)
      assets[assetId(i)] = {
        Priority: priorityOf(i),
        StartSeconds: START_SECONDS,
        Tags: i % 2 === 0 ? ["even"] : ["odd"],
        Cords: [
          { Instance: "a", Outlet: i },
          { Instance: "b", Outlet: i },
        ],
      };
    // A protected asset: never in an off sequence.
    assets["db-01"] = {
      Protected: true,
      Priority: 0,
      StartSeconds: START_SECONDS,
      Tags: ["db"],
      Cords: [
        { Instance: "a", Outlet: ASSETS },
        { Instance: "b", Outlet: ASSETS },
      ],
    };
    // Two assets whose first wave waits a minute: the stop's test.
    for (const [k, id] of ["slow-1", "slow-2"].entries())
      assets[id] = {
        Priority: k + 1,
        StartSeconds: 60,
        Tags: ["slow"],
        Cords: [
          { Instance: "a", Outlet: ASSETS + 1 + k },
          { Instance: "b", Outlet: ASSETS + 1 + k },
        ],
      };
    fed = feedAssetBook(h.app, {
      Pdus: { a: {}, b: {} },
      Assets: assets,
      Sequences: { MaxConcurrentStarts: MAX_STARTS, GapSeconds: 0 },
    });
    await waitFor(() => fed.book.get("s-00")?.readings.every((r) => r.resolved), "cords resolved");
  });
  after(async () => {
    fed?.close();
    await h?.close();
  });

  it("a dry run answers the plan and sends nothing", async () => {
    const since = mark();
    const res = await h.api.post(
      `/api/v1/sequences`,
      { action: "on", assets: "all", tags: ["even", "odd", "db"], dryRun: true },
      withKey,
    );
    assert.equal(res.status, 200, res.text);
    const plan = res.json<{ waves: { priority: number; assets: { id: string }[] }[]; assets: number }>();
    assert.equal(plan.assets, ASSETS + 1);
    assert.deepEqual(
      plan.waves.map((w) => [w.priority, w.assets.length]),
      [
        [0, 1],
        [1, 4],
        [2, 4],
        [2, 2],
        [3, 2],
      ],
    );
    assert.deepEqual(mark(), since);
  });

  it("off: every unprotected asset, priority the other way round, the protected one left out", async () => {
    const since = mark();
    const told: SequenceEvent[] = [];
    const unlisten = h.app.bus.on("sequence", (e) => told.push(e));
    const progress = await runToEnd({ action: "off", assets: "all", tags: ["even", "odd", "db"] });
    unlisten();
    assert.equal(progress.state, "done");
    // Its progress on the bus (what the webhooks send): each wave begun, then the end.
    const waves = told.at(-1)?.waves ?? 0;
    assert.ok(waves > 1);
    assert.deepEqual(
      told.map((e) => [e.action, e.state, e.wave]),
      [...Array.from({ length: waves }, (_, w) => ["off", "running", w]), ["off", "done", waves]],
    );
    assert.equal(told.at(-1)?.executed, ASSETS);
    assert.ok(!progress.assets.some((a) => a.id === "db-01"), "db-01 is not in an off sequence");
    assert.ok(
      progress.assets.every((a) => a.outcome === "executed"),
      JSON.stringify(progress.assets),
    );
    const writes = writesSince(since);
    assert.equal(writes.length, ASSETS * 2, "each cord written once");
    assert.equal(
      new Set(writes.map((w) => `${w.entry.unit}${w.entry.path}${w.entry.time}`)).size,
      ASSETS * 2,
    );
    assert.ok(writes.every((w) => w.entry.data.action === "off"));
    assert.ok(
      writes.every((w) => w.asset < ASSETS),
      "nothing written to db-01's cords",
    );
    const priorities = writes.map((w) => priorityOf(w.asset));
    assert.deepEqual(
      priorities,
      [...priorities].sort((x, y) => y - x),
      "priority 3 first, 1 last",
    );
  });

  it("on: priority order, at most MaxConcurrentStarts starting at once, each cord once", async () => {
    const since = mark();
    const progress = await runToEnd({ action: "on", assets: "all", tags: ["even", "odd"] });
    assert.equal(progress.state, "done");
    assert.ok(
      progress.assets.every((a) => a.outcome === "executed"),
      JSON.stringify(progress.assets),
    );
    const writes = writesSince(since).filter((w) => w.asset < ASSETS);
    assert.equal(writes.length, ASSETS * 2, "each cord written once");
    for (let i = 0; i < ASSETS; i++)
      assert.equal(writes.filter((w) => w.asset === i).length, 2, `${assetId(i)}: each of its 2 cords once`);
    // When each asset started: its first cord's write.
    const startOf = new Map<number, number>();
    for (const w of writes) if (!startOf.has(w.asset)) startOf.set(w.asset, w.entry.time);
    const order = [...startOf.entries()].sort((x, y) => x[1] - y[1]).map(([asset]) => asset);
    const priorities = order.map(priorityOf);
    assert.deepEqual(
      priorities,
      [...priorities].sort((x, y) => x - y),
      "priority order",
    );
    for (const t of startOf.values()) {
      const starting = [...startOf.values()].filter((u) => u >= t && u < t + START_SECONDS * 1000);
      assert.ok(starting.length <= MAX_STARTS, `${starting.length} assets started within one start-up time`);
    }
    for (let i = 0; i < ASSETS; i++) {
      assert.equal(h.sims.a.outlet(h.sims.a.deviceIds()[0]!, i).state, "on");
      assert.equal(h.sims.b.outlet(h.sims.b.deviceIds()[0]!, i).state, "on");
    }
  });

  it("a stop asked lets the wave in progress finish and starts no later one", async () => {
    const since = mark();
    const started = await h.api.post(
      `/api/v1/sequences`,
      { action: "on", assets: ["slow-1", "slow-2"] },
      withKey,
    );
    assert.equal(started.status, 202, started.text);
    const { id } = started.json<{ id: string }>();
    // slow-1's wave waits its 60 s of start-up time once its two cords are written.
    await waitFor(() => writesSince(since).length === 2, "the first wave written");
    const stop = await h.api.send(`/api/v1/sequences/${id}`, { method: "DELETE", headers: withKey });
    assert.equal(stop.status, 202, stop.text);
    let progress: Progress | null = null;
    await waitFor(async () => {
      progress = (await h.api.get(`/api/v1/sequences/${id}`)).json<Progress>();
      return progress.state === "stopped";
    }, "the sequence stopped");
    assert.deepEqual(
      progress!.assets.map((a) => [a.id, a.step]),
      [
        ["slow-1", "done"],
        ["slow-2", "skipped"],
      ],
    );
    assert.deepEqual(
      writesSince(since).map((w) => w.asset),
      [ASSETS + 1, ASSETS + 1],
      "slow-1's two cords, nothing of slow-2",
    );
  });

  it("refused: unknown assets, an empty selection, a stop without the key", async () => {
    const unknown = await h.api.post(`/api/v1/sequences`, { action: "on", assets: ["nope"] }, withKey);
    assert.equal(unknown.status, 404, unknown.text);
    const none = await h.api.post(
      `/api/v1/sequences`,
      { action: "on", assets: "all", tags: ["none"] },
      withKey,
    );
    assert.equal(none.status, 400, none.text);
    const noKey = await h.api.send(`/api/v1/sequences/abc`, { method: "DELETE" });
    assert.equal(noKey.status, 401, noKey.text);
    const missing = await h.api.get(`/api/v1/sequences/abc`);
    assert.equal(missing.status, 404, missing.text);
  });
});
