/**
 * Which replica should hold which bucket: pure functions, the same in every replica, so that
 * replicas reading the same leases agree without talking to each other.
 *
 * - An instance's bucket: the first 4 bytes of SHA-256 of its id (UTF-8), big-endian, modulo the
 *   bucket count. Stable across versions, platforms and restarts.
 * - A member's weight for a bucket (rendezvous, highest-random-weight hashing): the first 8 bytes of
 *   SHA-256 of `<member>\n<bucket>`, big-endian.
 * - The assignment ({@link assign}) is rendezvous hashing with bounded loads and stickiness: every
 *   candidate gets the even share (⌊B/n⌋ or ⌈B/n⌉), a bucket stays with its current holder while
 *   that holder is within its share, and the buckets that must move go to the members with room by
 *   weight. Plain rendezvous hashing spreads 64 buckets over 3 members with a standard deviation of
 *   about 4 buckets, and a fourth member takes a binomial number of them (over 18 in about one case
 *   in four); this moves exactly what balance needs: a joining member takes its share and nothing
 *   else moves, a leaving member's buckets go to the others and nothing else moves.
 */
import { createHash } from "node:crypto";

/** The bucket of an instance id, in 0..buckets-1. */
export function bucketOf(instanceId: string, buckets: number): number {
  return createHash("sha256").update(instanceId, "utf8").digest().readUInt32BE(0) % buckets;
}

/** A member's rendezvous weight for a bucket. */
export function weight(member: string, bucket: number): bigint {
  return createHash("sha256").update(`${member}\n${bucket}`, "utf8").digest().readBigUInt64BE(0);
}

/** Higher weight first; equal weights (never seen in practice) by member name. */
function byWeight(bucket: number, weights: WeightCache): (a: string, b: string) => number {
  return (a, b) => {
    const wa = weights.get(a, bucket);
    const wb = weights.get(b, bucket);
    if (wa !== wb) return wa > wb ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  };
}

/** Weights by member and bucket, computed once per pair (a replica recomputes the assignment often). */
export class WeightCache {
  readonly #weights = new Map<string, bigint[]>();

  get(member: string, bucket: number): bigint {
    let row = this.#weights.get(member);
    if (row === undefined) {
      row = [];
      this.#weights.set(member, row);
    }
    return (row[bucket] ??= weight(member, bucket));
  }

  /** Forgets members not in `keep` (so that the cache stays bounded as members come and go). */
  retain(keep: ReadonlySet<string>): void {
    for (const member of this.#weights.keys()) if (!keep.has(member)) this.#weights.delete(member);
  }
}

/**
 * The target holder of every bucket.
 *
 * @param buckets the bucket count
 * @param candidates the members that may hold buckets (distinct names)
 * @param current the member currently holding each bucket (null: nobody, or nobody valid); a holder
 *   that is not a candidate counts as nobody
 * @returns one candidate per bucket (all null when there is no candidate)
 *
 * Every candidate gets ⌊B/n⌋ buckets, and B mod n of them one more: those holding the most now (ties
 * by name), so that no bucket moves only to even out a remainder. A candidate keeps its current
 * buckets up to its share, the ones with its highest weights; the rest, and the buckets nobody holds,
 * go to the candidates with room, the highest weight first over all (bucket, candidate) pairs.
 */
export function assign(
  buckets: number,
  candidates: readonly string[],
  current: readonly (string | null)[],
  weights: WeightCache = new WeightCache(),
): (string | null)[] {
  const target: (string | null)[] = new Array<string | null>(buckets).fill(null);
  if (candidates.length === 0) return target;
  const members = [...new Set(candidates)];
  const held = new Map<string, number[]>(members.map((m) => [m, []]));
  for (let b = 0; b < buckets; b++) {
    const holder = current[b] ?? null;
    if (holder !== null) held.get(holder)?.push(b);
  }

  const floor = Math.floor(buckets / members.length);
  const remainder = buckets % members.length;
  const byLoad = [...members].sort((a, b) => held.get(b)!.length - held.get(a)!.length || (a < b ? -1 : 1));
  const quota = new Map(byLoad.map((m, i) => [m, floor + (i < remainder ? 1 : 0)]));

  const room = new Map<string, number>();
  for (const member of members) {
    const mine = held.get(member)!;
    mine.sort((a, b) => {
      const wa = weights.get(member, a);
      const wb = weights.get(member, b);
      return wa === wb ? a - b : wa > wb ? -1 : 1;
    });
    const keep = mine.slice(0, quota.get(member));
    for (const b of keep) target[b] = member;
    room.set(member, quota.get(member)! - keep.length);
  }

  const open: number[] = [];
  for (let b = 0; b < buckets; b++) if (target[b] === null) open.push(b);
  if (open.length === 0) return target;
  const pairs: { bucket: number; member: string; weight: bigint }[] = [];
  for (const bucket of open) {
    for (const member of members) {
      if (room.get(member)! > 0) pairs.push({ bucket, member, weight: weights.get(member, bucket) });
    }
  }
  pairs.sort((x, y) =>
    x.weight !== y.weight
      ? x.weight > y.weight
        ? -1
        : 1
      : x.bucket - y.bucket || (x.member < y.member ? -1 : 1),
  );
  for (const { bucket, member } of pairs) {
    if (target[bucket] !== null) continue;
    const left = room.get(member)!;
    if (left === 0) continue;
    target[bucket] = member;
    room.set(member, left - 1);
  }
  return target;
}

/**
 * The order in which other candidates step in for a bucket its target does not take: by weight,
 * the target left out. 1 is the first to step in.
 */
export function fallbackRank(
  bucket: number,
  target: string,
  member: string,
  candidates: readonly string[],
  weights: WeightCache,
): number {
  const others = candidates.filter((c) => c !== target).sort(byWeight(bucket, weights));
  const index = others.indexOf(member);
  return index < 0 ? Infinity : index + 1;
}
