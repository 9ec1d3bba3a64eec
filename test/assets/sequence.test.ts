import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  beginWave,
  finishWave,
  newJournal,
  nextBatch,
  onceIdOf,
  parseChunk,
  parseHead,
  recordOutcome,
  requestStop,
  resumeStep,
  STEPS_IN_FLIGHT,
  takeOver,
  waveAssets,
  waveComplete,
  type JournalChunk,
  type JournalHead,
} from "../../src/assets/journal.js";
import { planSequence, type SequencePlan } from "../../src/assets/sequence.js";
import { ONCE_ID_PATTERN } from "../../src/cluster/elector.js";
import { COMMAND_ID_PATTERN } from "../../src/control/writes.js";
import type { AssetConfig, AssetModel } from "../../src/assets/types.js";
import { assetModel } from "../../testkit/asset-fleet.js";

function fleetModel(
  specs: readonly {
    id: string;
    priority: number;
    start: number;
    cords?: number;
    protected?: boolean;
    tags?: string[];
  }[],
  max = 2,
  gap = 5,
): AssetModel {
  const assets: Record<string, AssetConfig> = {};
  let outlet = 0;
  for (const s of specs)
    assets[s.id] = {
      Cords: Array.from({ length: s.cords ?? 1 }, () => ({ Instance: "p", Outlet: outlet++ })),
      Priority: s.priority,
      StartSeconds: s.start,
      Protected: s.protected ?? false,
      Tags: s.tags ?? [],
    };
  return assetModel(assets, { p: {} }, [], { MaxConcurrentStarts: max, GapSeconds: gap });
}

const planOf = (
  model: AssetModel,
  action: "on" | "off",
  assets: readonly string[] | "all" = "all",
  tags?: string[],
): SequencePlan => {
  const r = planSequence(model, { action, assets, ...(tags === undefined ? {} : { tags }) });
  assert.ok(r.ok);
  return r.plan;
};

describe("sequence plans", () => {
  const model = fleetModel([
    { id: "web-2", priority: 3, start: 20, tags: ["web"] },
    { id: "db-1", priority: 1, start: 60, protected: true, tags: ["db"] },
    { id: "web-1", priority: 3, start: 30, tags: ["web"] },
    { id: "web-3", priority: 3, start: 10, tags: ["web"] },
    { id: "cache", priority: 2, start: 15 },
  ]);

  it("powers on by priority in waves of at most MaxConcurrentStarts, each waiting its slowest start plus the gap", () => {
    const plan = planOf(model, "on");
    assert.deepEqual(
      plan.waves.map((w) => [w.priority, w.assets.map((a) => a.id), w.startsAt, w.waitSeconds]),
      [
        [1, ["db-1"], 0, 65],
        [2, ["cache"], 65, 20],
        [3, ["web-1", "web-2"], 85, 35],
        [3, ["web-3"], 120, 10],
      ],
    );
    assert.equal(plan.totalSeconds, 130, "the last wave waits for its start-up, not the gap");
    assert.equal(plan.assets, 5);
    assert.deepEqual(plan.refused, []);
  });

  it("powers off the other way round, waiting the gap only, and never a protected asset", () => {
    const plan = planOf(model, "off");
    assert.deepEqual(
      plan.waves.map((w) => [w.priority, w.assets.map((a) => a.id), w.startsAt, w.waitSeconds]),
      [
        [3, ["web-1", "web-2"], 0, 5],
        [3, ["web-3"], 5, 5],
        [2, ["cache"], 10, 0],
      ],
    );
    assert.deepEqual(
      plan.refused.map((r) => r.id),
      ["db-1"],
    );
  });

  it("selects by id and by tag, and refuses an id that is not configured", () => {
    assert.deepEqual(
      planOf(model, "on", ["cache", "web-3", "cache"]).waves.map((w) => w.assets.map((a) => a.id)),
      [["cache"], ["web-3"]],
    );
    assert.equal(planOf(model, "on", "all", ["web", "db"]).assets, 4);
    assert.deepEqual(planSequence(model, { action: "on", assets: ["nope", "cache"] }), {
      ok: false,
      unknown: ["nope"],
    });
    assert.equal(planOf(model, "on", []).totalSeconds, 0);
  });

  it("keeps its rules for any fleet: every asset once, priorities in order, no wave over the limit or mixing priorities", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ priority: fc.integer({ min: 0, max: 5 }), start: fc.integer({ min: 0, max: 120 }) }),
          { maxLength: 40 },
        ),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom<"on" | "off">("on", "off"),
        (specs, max, action) => {
          const m = fleetModel(
            specs.map((s, i) => ({ id: `a${String(i).padStart(2, "0")}`, ...s })),
            max,
            3,
          );
          const plan = planOf(m, action);
          const ids = plan.waves.flatMap((w) => w.assets.map((a) => a.id));
          assert.deepEqual([...ids].sort(), [...m.assets.keys()].sort());
          let at = 0;
          plan.waves.forEach((w, i) => {
            assert.ok(w.assets.length >= 1 && w.assets.length <= max);
            assert.ok(w.assets.every((a) => a.priority === w.priority));
            assert.equal(w.startsAt, at);
            at += w.waitSeconds;
            const prev = plan.waves[i - 1];
            if (prev !== undefined)
              assert.ok(action === "on" ? prev.priority <= w.priority : prev.priority >= w.priority);
            const ordered = w.assets.map((a) => a.id);
            assert.deepEqual(ordered, [...ordered].sort(), "ties by id");
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});

/**
 * A sequence run by replicas that die: the engine keeps the records (written whole, as a
 * conditional write would), the fencing keeps every once-only id recorded, the PDU counts the
 * writes each cord gets. A runner does one step at a time and may be killed between any two; the
 * next one reads the records back and resumes.
 */
class World {
  head = "";
  chunks: string[] = [];
  readonly onceIds = new Set<string>();
  readonly writes = new Map<string, number>();
  readonly outlets = new Map<string, "on" | "off">();
  cordsOf: (id: string) => number = () => 1;
}

/** One runner; `run(budget)` does at most `budget` steps and says whether the sequence ended. */
class Runner {
  #head: JournalHead;
  readonly #chunks: JournalChunk[];
  readonly #world: World;
  #resumed = false;

  constructor(world: World, name: string) {
    this.#world = world;
    const head = parseHead(world.head);
    assert.ok(!("problem" in head), "the head reads back");
    this.#head = takeOver(head, name);
    this.#chunks = world.chunks.map((c) => {
      const chunk = parseChunk(c, head.id);
      assert.ok(!("problem" in chunk));
      return chunk;
    });
  }

  #save(head: JournalHead): void {
    this.#head = head;
    this.#world.head = JSON.stringify(head);
  }

  /** The fencing records the id, then (a step later: the runner may die in between) the PDU is written. */
  *#send(asset: string, cord: number, onceId: string): Generator<void> {
    const w = this.#world;
    if (w.onceIds.has(onceId)) {
      this.#save(recordOutcome(this.#head, onceId, "unknown", "its once-only id was used before"));
      return;
    }
    w.onceIds.add(onceId);
    yield;
    const key = `${asset}/${cord}`;
    w.writes.set(key, (w.writes.get(key) ?? 0) + 1);
    w.outlets.set(key, this.#head.action);
  }

  /** The steps of a runner, one per call of the returned function. */
  *steps(): Generator<void> {
    for (;;) {
      const head = this.#head;
      if (head.state === "done" || head.state === "stopped") return;
      if (!this.#resumed) {
        this.#resumed = true;
        for (const s of head.steps.filter((x) => x.status === "intent")) {
          const d = resumeStep(s, head.action, this.#world.outlets.get(`${s.asset}/${s.cord}`) ?? null);
          if (d.do === "done") this.#save(recordOutcome(this.#head, s.onceId, "done", null));
          else if (d.do === "send") {
            yield* this.#send(s.asset, s.cord, d.onceId);
            yield;
            if (this.#head.steps.find((x) => x.onceId === s.onceId)?.status === "intent")
              this.#save(recordOutcome(this.#head, s.onceId, "done", null));
          }
          yield;
        }
        continue;
      }
      if (head.steps.length === 0) {
        const ids = waveAssets(head, this.#chunks, head.wave);
        this.#save(
          beginWave(
            head,
            ids.map((id) => ({ id, cords: this.#world.cordsOf(id) })),
          ),
        );
        yield;
        continue;
      }
      if (waveComplete(head)) {
        this.#save(finishWave(head));
        yield;
        continue;
      }
      const { head: marked, batch } = nextBatch(head);
      this.#save(marked);
      yield;
      for (const s of batch) {
        yield* this.#send(s.asset, s.cord, s.onceId);
        yield;
        if (this.#head.steps.find((x) => x.onceId === s.onceId)?.status === "intent")
          this.#save(recordOutcome(this.#head, s.onceId, "done", null));
        yield;
      }
    }
  }
}

describe("sequence journal", () => {
  it("survives any number of runners killed at any step: no cord written twice, every cord done or said unknown", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ priority: fc.integer({ min: 0, max: 3 }), cords: fc.integer({ min: 1, max: 8 }) }),
          {
            minLength: 1,
            maxLength: 30,
          },
        ),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 6 }),
        (specs, max, kills) => {
          const model = fleetModel(
            specs.map((s, i) => ({ id: `a${i}`, priority: s.priority, start: 1, cords: s.cords })),
            max,
          );
          const plan = planOf(model, "on");
          const world = new World();
          world.cordsOf = (id) => model.assets.get(id)!.cords.length;
          const { head, chunks } = newJournal("s1", plan, "r0/1", 0);
          world.head = JSON.stringify(head);
          world.chunks = chunks.map((c) => JSON.stringify(c));
          for (const [n, budget] of [...kills, Infinity].entries()) {
            const steps = new Runner(world, `r${n}/1`).steps();
            for (let i = 0; i < budget; i++) if (steps.next().done === true) break;
          }
          const end = parseHead(world.head);
          assert.ok(!("problem" in end));
          assert.equal(end.state, "done");
          const cords = [...model.assets.values()].flatMap((a) => a.cords.map((_, i) => `${a.id}/${i}`));
          for (const c of cords) assert.ok((world.writes.get(c) ?? 0) <= 1, `${c} written at most once`);
          const written = cords.filter((c) => world.writes.get(c) === 1).length;
          const notWritten = cords.length - written;
          assert.equal(end.executed + end.failedCount, model.assets.size);
          if (notWritten > 0) assert.ok(end.failedCount > 0, "a cord not written is never reported done");
          for (const f of end.failures) assert.match(f.detail, /unknown/);
          if (kills.length === 0) {
            assert.equal(end.executed, model.assets.size);
            assert.equal(written, cords.length);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("marks at most STEPS_IN_FLIGHT intents at a time, and a stop ends the sequence after the wave in progress", () => {
    const model = fleetModel(
      Array.from({ length: 12 }, (_, i) => ({
        id: `a${String(i).padStart(2, "0")}`,
        priority: 1,
        start: 1,
        cords: 8,
      })),
      6,
    );
    const plan = planOf(model, "on");
    const { head: start, chunks } = newJournal("s2", plan, "r0/1", 0);
    let head = beginWave(
      start,
      waveAssets(start, chunks, 0).map((id) => ({ id, cords: 8 })),
    );
    assert.equal(head.steps.length, 48);
    const first = nextBatch(head);
    assert.equal(first.batch.length, STEPS_IN_FLIGHT);
    assert.deepEqual(nextBatch(first.head).batch, [], "no more until outcomes are recorded");
    head = first.head;
    for (const s of first.batch) head = recordOutcome(head, s.onceId, "done", null);
    head = requestStop(head);
    assert.equal(head.state, "stopping");
    const rest = nextBatch(head);
    assert.equal(rest.batch.length, 16, "the wave in progress is finished: no asset is left half written");
    head = rest.head;
    for (const s of rest.batch)
      head = recordOutcome(head, s.onceId, s.asset === "a05" ? "failed" : "done", "PDU error");
    assert.ok(waveComplete(head));
    head = finishWave(head);
    assert.equal(head.state, "stopped");
    assert.equal(head.wave, head.sizes.length, "no later wave");
    assert.equal(head.executed, 5);
    assert.deepEqual(
      head.failures.map((f) => [f.asset, f.outcome]),
      [["a05", "partial"]],
    );
    assert.throws(
      () => finishWave(beginWave({ ...head, wave: 1, state: "running" }, [{ id: "a06", cords: 1 }])),
      /without an outcome/,
    );
  });

  it("makes once-only ids the fencing takes, also as a command id the control core extends", () => {
    const longest = onceIdOf("A".repeat(24), 9999, 999, 7);
    assert.match(longest, ONCE_ID_PATTERN);
    assert.match(longest, COMMAND_ID_PATTERN);
    assert.match(`${longest}-0`, ONCE_ID_PATTERN);
    assert.notEqual(onceIdOf("s1", 1, 2, 3), onceIdOf("s1", 12, 3, 3));
    assert.throws(() => newJournal("s-1", planOf(fleetModel([]), "on"), "r", 0), /sequence id/);
  });

  it("reads back only records that check", () => {
    const plan = planOf(fleetModel([{ id: "a", priority: 1, start: 1 }]), "on");
    const { head, chunks } = newJournal("s3", plan, "r0/1", 5);
    assert.deepEqual(parseHead(JSON.stringify(head)), head);
    assert.deepEqual(parseChunk(JSON.stringify(chunks[0]), "s3"), chunks[0]);
    for (const bad of [
      "not json",
      "[]",
      JSON.stringify({ ...head, v: 2 }),
      JSON.stringify({ ...head, id: "s/3" }),
      JSON.stringify({ ...head, action: "reboot" }),
      JSON.stringify({ ...head, wave: 5 }),
      JSON.stringify({ ...head, chunks: 7 }),
      JSON.stringify({ ...head, sizes: [1, 0], waits: [1, 1] }),
      JSON.stringify({
        ...head,
        steps: [{ asset: "a", cord: 9, onceId: "x", status: "done", detail: null }],
      }),
      JSON.stringify({
        ...head,
        steps: [{ asset: "a", cord: 0, onceId: "x y", status: "done", detail: null }],
      }),
      JSON.stringify({ ...head, failures: [{ asset: "a", outcome: "executed", detail: "" }] }),
    ])
      assert.ok("problem" in parseHead(bad), bad);
    assert.ok("problem" in parseChunk(JSON.stringify(chunks[0]), "other"));
    assert.ok("problem" in parseChunk(JSON.stringify({ ...chunks[0], assets: ["a b"] }), "s3"));
  });
});
