/**
 * Who should hold which bucket (src/cluster/assign.ts), as properties over random member names,
 * bucket counts and current holders (fast-check), plus the hashes pinned to values computed with
 * `sha256sum`, since every replica of every version must agree on them.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { assign, bucketOf, fallbackRank, weight, WeightCache } from "../../src/cluster/assign.js";

const memberName = fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?$/);
const members = (min: number, max: number) => fc.uniqueArray(memberName, { minLength: min, maxLength: max });

function counts(target: readonly (string | null)[]): Map<string, number> {
  const map = new Map<string, number>();
  for (const m of target) if (m !== null) map.set(m, (map.get(m) ?? 0) + 1);
  return map;
}

function assertBalanced(target: readonly (string | null)[], candidates: readonly string[]): void {
  const n = candidates.length;
  const floor = Math.floor(target.length / n);
  assert.ok(
    target.every((m) => m !== null && candidates.includes(m)),
    "every bucket goes to a candidate",
  );
  const c = counts(target);
  for (const m of candidates) {
    const k = c.get(m) ?? 0;
    assert.ok(k === floor || k === floor + 1, `${m} has ${k}, share ${floor}..${floor + 1}`);
  }
  assert.equal(
    [...c.values()].filter((k) => k === floor + 1).length,
    target.length % n,
    "exactly B mod n members carry one more",
  );
}

const moved = (a: readonly (string | null)[], b: readonly (string | null)[]) =>
  a.reduce((n, m, i) => n + (m !== b[i] ? 1 : 0), 0);

describe("hashes every replica must agree on", () => {
  it("an instance's bucket is SHA-256 of its id, first 4 bytes big-endian, modulo the count", () => {
    // printf default | sha256sum → 37a8eec1…; printf rack-a | sha256sum → e8530862…
    assert.equal(bucketOf("default", 64), 0x37a8eec1 % 64);
    assert.equal(bucketOf("default", 1024), 0x37a8eec1 % 1024);
    assert.equal(bucketOf("rack-a", 64), 0xe8530862 % 64);
    assert.equal(bucketOf("rack-a", 1), 0);
  });

  it("a member's weight for a bucket is SHA-256 of `<member>\\n<bucket>`, first 8 bytes", () => {
    // printf 'a\n3' | sha256sum → 16399384358cadee…
    assert.equal(weight("a", 3), 0x16399384358cadeen);
  });
});

describe("the assignment (rendezvous with bounded loads)", () => {
  it("3 members and 64 buckets from nothing: 22, 21, 21", () => {
    const target = assign(64, ["pdu-bridge-0", "pdu-bridge-1", "pdu-bridge-2"], []);
    assert.deepEqual([...counts(target).values()].sort(), [21, 21, 22]);
  });

  it("is balanced whatever the current holders, and a fixed point", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 256 }),
        members(1, 8),
        fc.array(fc.option(memberName, { nil: null }), { maxLength: 256 }),
        (buckets, candidates, current) => {
          const target = assign(buckets, candidates, current);
          assertBalanced(target, candidates);
          assert.deepEqual(assign(buckets, candidates, target), target, "settled assignments stay");
        },
      ),
    );
  });

  it("does not depend on the order of the candidates (replicas list members differently)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 128 }),
        members(1, 6),
        fc.integer(),
        (buckets, candidates, seed) => {
          const current = assign(buckets, candidates.slice(0, Math.max(1, candidates.length - 1)), []);
          const shuffled = [...candidates].sort(() =>
            (seed = (seed * 1103515245 + 12345) | 0) & 1 ? 1 : -1,
          );
          assert.deepEqual(assign(buckets, shuffled, current), assign(buckets, candidates, current));
        },
      ),
    );
  });

  it("a member joining takes its share, and nothing else moves", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 256 }), members(2, 9), (buckets, all) => {
        const before = all.slice(0, -1);
        const joining = all.at(-1)!;
        const settled = assign(buckets, before, []);
        const after = assign(buckets, all, settled);
        assertBalanced(after, all);
        const moves = moved(settled, after);
        assert.ok(moves <= Math.ceil(buckets / all.length), `${moves} moved`);
        for (let b = 0; b < buckets; b++) {
          if (settled[b] !== after[b])
            assert.equal(after[b], joining, "a moved bucket goes to the new member");
        }
      }),
    );
  });

  it("a fourth member joining three with 64 buckets moves at most ceil(64/4)+2", () => {
    fc.assert(
      fc.property(members(4, 4), (all) => {
        const settled = assign(64, all.slice(0, 3), []);
        assert.ok(moved(settled, assign(64, all, settled)) <= Math.ceil(64 / 4) + 2);
      }),
    );
  });

  it("a member leaving: only its buckets move", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 256 }), members(2, 9), fc.nat(), (buckets, all, pick) => {
        const settled = assign(buckets, all, []);
        const leaving = all[pick % all.length]!;
        const rest = all.filter((m) => m !== leaving);
        const after = assign(buckets, rest, settled);
        assertBalanced(after, rest);
        for (let b = 0; b < buckets; b++) {
          if (settled[b] !== leaving) assert.equal(after[b], settled[b], `bucket ${b} stays`);
        }
      }),
    );
  });

  it("no candidates: nobody is assigned anything", () => {
    assert.deepEqual(assign(3, [], ["a", null, "b"]), [null, null, null]);
  });

  it("fallback ranks order the other candidates by weight, the target left out", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 63 }), members(2, 6), (bucket, candidates) => {
        const weights = new WeightCache();
        const target = candidates[0]!;
        const ranks = candidates.slice(1).map((m) => fallbackRank(bucket, target, m, candidates, weights));
        assert.deepEqual(
          [...ranks].sort((a, b) => a - b),
          ranks.map((_, i) => i + 1),
        );
        assert.equal(fallbackRank(bucket, target, "not-a-candidate", candidates, weights), Infinity);
      }),
    );
  });
});
