/**
 * The cluster scenario's pure parts (bench/cluster.ts, bench/lib/cluster-options.ts): its flags,
 * the acquisitions and renewal gaps it reads from the bucket leases' writes, and the simulators'
 * answer to "who polled this PDU" (bench/lib/sim-child.ts `pollers`) that tells replicas apart.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { countAcquisitions, renewalGaps, type LeasePut } from "../../bench/cluster.js";
import { clusterOptions, DEFAULT_TIMINGS, parseTimings } from "../../bench/lib/cluster-options.js";
import { startSimFleet } from "../../bench/lib/sim-fleet.js";
import { MEMBER_HEADER } from "../../src/pdu/driver.js";

const put = (bucket: number, holder: string, acquireTime: string | null, at: number): LeasePut => ({
  bucket,
  holder,
  acquireTime,
  at,
});

describe("bench cluster scenario", () => {
  it("defaults: 100 instances per replica, 10 kills, 64 buckets; quick is small; the CPU run keeps the service's timings", () => {
    const full = clusterOptions(false, {});
    assert.equal(full.instancesPerReplica, 100);
    assert.equal(full.kills, 10);
    assert.equal(full.buckets, 64);
    assert.deepEqual(full.cpuTimings, DEFAULT_TIMINGS);
    assert.deepEqual(full.timings, { lease: 6, renew: 4, retry: 1 });
    const quick = clusterOptions(true, {});
    assert.ok(quick.instancesPerReplica < full.instancesPerReplica && quick.kills < full.kills);
    const sized = clusterOptions(false, { instances: "20", kills: "2", timings: "15,10,2", poll: "5" });
    assert.equal(sized.instancesPerReplica, 20);
    assert.equal(sized.kills, 2);
    assert.equal(sized.pollIntervalS, 5);
    assert.deepEqual(sized.timings, DEFAULT_TIMINGS);
  });

  it("refuses bad flags, naming them, and lease timings the service would refuse", () => {
    assert.throws(() => clusterOptions(false, { instances: "0" }), /--cluster-instances/);
    assert.throws(() => clusterOptions(false, { kills: "two" }), /--cluster-kills/);
    assert.throws(() => clusterOptions(false, { buckets: "2.5" }), /--cluster-buckets/);
    for (const bad of ["6,4", "6,6,1", "6,4,4", "a,b,c", "6,4,-1", "6,4,1,1"])
      assert.throws(() => parseTimings(bad), /--cluster-timings/, bad);
    assert.deepEqual(parseTimings("3, 2, 0.5"), { lease: 3, renew: 2, retry: 0.5 });
  });

  it("acquisitions: a new holder or a new acquire time counts, renewals and releases do not", () => {
    const puts = [
      put(0, "r1/a", "t0", 1000),
      put(1, "r2/b", "t0", 1000),
      put(0, "r1/a", "t0", 2000), // renewal
      put(0, "", "t0", 3000), // release
      put(0, "r2/b", "t3", 3100), // taken by another
      put(1, "r2/b", "t4", 5000), // dropped and taken again by the same holder
    ];
    assert.equal(countAcquisitions(puts, 0, 10_000), 4);
    assert.equal(countAcquisitions(puts, 2500, 10_000), 2);
    assert.equal(countAcquisitions(puts, 0, 1500), 2);
  });

  it("renewal gaps: a holder silent for longer than the limit, unless it was killed in the gap", () => {
    const puts = [
      put(0, "r1/a", "t0", 0),
      put(0, "r1/a", "t0", 1000),
      put(0, "r1/a", "t0", 2000),
      put(1, "r2/b", "t0", 0),
      put(1, "r2/b", "t0", 5000), // 5 s without a write
      put(2, "r3/c", "t0", 0), // nothing after: silent until the end
      put(3, "r1/a", "t0", 0),
      put(3, "", "t0", 500), // released: no holder, no gap
    ];
    const none = () => false;
    const gaps = renewalGaps(puts, 4000, 0, 10_000, none);
    assert.deepEqual(
      gaps.map((g) => [g.bucket, g.member, g.seconds]),
      [
        [0, "r1", 8],
        [1, "r2", 5],
        [1, "r2", 5],
        [2, "r3", 10],
      ],
    );
    const killedR3 = renewalGaps(
      puts,
      4000,
      0,
      10_000,
      (member, start, end) => member === "r3" && start <= 100 && end >= 100,
    );
    assert.ok(!killedR3.some((g) => g.member === "r3"));
    // Gaps ending before `from` are left out; a longer limit finds fewer.
    assert.equal(renewalGaps(puts, 4000, 9000, 10_000, none).length, 3);
    assert.deepEqual(
      renewalGaps(puts, 9000, 0, 10_000, none).map((g) => g.bucket),
      [2],
    );
  });

  it("the simulators tell who polled each PDU by its member header, with first and last arrival", async () => {
    const fleet = await startSimFleet({ pdus: 2, processes: 1, outlets: 2 });
    try {
      const since = Date.now();
      const get = (port: number, member?: string) =>
        fetch(
          `http://127.0.0.1:${port}/api`,
          member === undefined ? {} : { headers: { [MEMBER_HEADER]: member } },
        ).then((r) => r.arrayBuffer());
      await get(fleet.ports[0]!, "r1");
      await get(fleet.ports[0]!, "r1");
      await get(fleet.ports[0]!);
      await get(fleet.ports[1]!, "r2");
      const polls = await fleet.pollers(since);
      assert.equal(polls.length, 2);
      assert.deepEqual(Object.keys(polls[0]!).sort(), ["", "r1"]);
      assert.equal(polls[0]!.r1![0], 2);
      assert.ok(polls[0]!.r1![1] <= polls[0]!.r1![2]);
      assert.equal(polls[0]![""]![0], 1);
      assert.deepEqual(Object.keys(polls[1]!), ["r2"]);
      // A span that ended before the polls holds none of them.
      assert.deepEqual(await fleet.pollers(since - 10_000, since - 1), [{}, {}]);
    } finally {
      await fleet.close();
    }
  });
});
