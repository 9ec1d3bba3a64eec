/**
 * Lifetime energy counters among three replicas on a real etcd, through two kill -9 failovers, each
 * right after a reset of an outlet's counter at the PDU that the killed holder had published: the
 * new holder of a bucket reads its checkpoint record before it publishes a lifetime counter, and that
 * record already holds the reset, so every `energyLifetime` value MQTT sees never decreases
 * (carrying on from a checkpoint older than the reset would publish a lower value), and at the end
 * each outlet's counter is
 * the simulator's ground truth within one poll interval's energy (and the PDU's 1 Wh resolution).
 * The records live beside the leases, out of the leases' lists.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import { PARENT, ReplicaFleet } from "../../testkit/replica-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const BUCKETS = 4;
const INSTANCES = 4;
const OUTLETS = 2;
const LIFETIME = "/measurements/energyLifetime";
/** What the PDU's counter is made to rise by just before each reset (Wh). */
const BUMP_WH = 4;

describe(
  "lifetime energy counters through kill -9 failovers among three replicas",
  { timeout: 240_000 },
  () => {
    let fleet: ReplicaFleet;

    before(async () => {
      fleet = await ReplicaFleet.start({ instances: INSTANCES, buckets: BUCKETS, outlets: OUTLETS });
      await Promise.all(["r1", "r2", "r3"].map((n) => fleet.add(n)));
      await fleet.balanced(["r1", "r2", "r3"]);
    });
    after(async () => {
      await fleet?.close();
    });

    const lifetimes = () =>
      fleet.recorder.messages.filter((m) => m.topic.endsWith(LIFETIME) && m.payload !== "");
    const outletTopic = (id: string, i: number) => {
      const device = fleet.sims.get(id)!.deviceIds()[0]!;
      return `${PARENT}/${id}/${device}/outlets/${i}${LIFETIME}`;
    };
    const latest = (topic: string) => fleet.recorder.messages.filter((m) => m.topic === topic).at(-1);

    it("never decrease, and end at the ground truth, through a reset just before each kill", async () => {
      /** Instances whose outlet 0 was reset (a reset loses up to a poll interval's energy). */
      const resets: string[] = [];
      const ids = [...fleet.sims.keys()];
      await waitFor(
        () => ids.every((id) => [0, 1].every((i) => latest(outletTopic(id, i)) !== undefined)),
        "every outlet's lifetime counter published",
        30_000,
      );
      const alive = ["r1", "r2", "r3"];
      for (let round = 0; round < 2; round++) {
        const holders = await fleet.holders();
        // The victim: a live replica holding an instance, whose outlet 0 is reset at the PDU just
        // before the kill, after the victim published the reset but (most likely) before its next
        // checkpoint: the new holder must not continue from a checkpoint older than the reset.
        const id = ids.find((i) => alive.includes(holders.get(bucketOf(i, BUCKETS)) ?? ""));
        assert.ok(id !== undefined, "an instance held by a live replica");
        const victim = holders.get(bucketOf(id, BUCKETS))!;
        const theirs = ids.filter((i) => holders.get(bucketOf(i, BUCKETS)) === victim);
        // Let a checkpoint be written and a few polls go by.
        await sleep(2500);
        const sim = fleet.sims.get(id)!;
        const device = sim.deviceIds()[0]!;
        const energyTopic = outletTopic(id, 0).replace(LIFETIME, "/measurements/energy");
        // The PDU's counter rises by 4 Wh at once (as fast as a 63 A outlet may draw it; the truth
        // does not have it, so it is added to the outlet's truth below), and once the victim has
        // published that, is reset; the victim is killed as soon as it has polled the reset, most
        // likely before its periodic checkpoint (every 10 s) holds either.
        const bumpedKwh = sim.outlet(device, 0).energyKwh + BUMP_WH / 1000;
        sim.setEnergy(device, 0, bumpedKwh);
        await waitFor(
          () => Number(latest(energyTopic)?.payload) >= bumpedKwh - 0.0005,
          `${victim} polled ${id}'s counter's rise`,
          15_000,
        );
        sim.setEnergy(device, 0, 0);
        const resetAt = Date.now();
        await waitFor(
          () => {
            const m = latest(energyTopic);
            return m !== undefined && m.at > resetAt && Number(m.payload) < 0.5;
          },
          `${victim} polled the reset of ${id}`,
          15_000,
        );
        await fleet.get(victim).process.kill();
        const killedAt = Date.now();
        resets.push(id);
        alive.splice(alive.indexOf(victim), 1);
        await fleet.balanced(alive, 60_000);
        // The new holders publish the victim's instances again.
        await waitFor(
          () =>
            theirs.every((i) =>
              fleet.recorder.messages.some((m) => m.topic === outletTopic(i, 0) && m.at > killedAt + 500),
            ),
          `the instances of ${victim} published by their new holders`,
          60_000,
        );
      }
      await sleep(3000);

      const last = new Map<string, number>();
      for (const m of lifetimes()) {
        const value = Number(m.payload);
        assert.ok(Number.isFinite(value) && value >= 0, `${m.topic}: ${m.payload}`);
        const before = last.get(m.topic) ?? 0;
        assert.ok(value >= before, `${m.topic} went from ${before} to ${value}`);
        last.set(m.topic, value);
      }

      for (const [id, sim] of fleet.sims) {
        const device = sim.deviceIds()[0]!;
        for (let i = 0; i < OUTLETS; i++) {
          const message = latest(outletTopic(id, i));
          assert.ok(message !== undefined);
          const published = Number(message.payload) * 1000;
          const truth =
            sim.energyTruthWh(device, i) + (i === 0 ? resets.filter((r) => r === id).length * BUMP_WH : 0);
          // Since that message, the outlet drew at most its power for the time since and a poll (1 s).
          const watts = sim.outlet(device, i).realPowerW;
          const drawnSince = (watts * ((Date.now() - message.at) / 1000 + 2)) / 3600;
          assert.ok(published <= truth + 1, `${id}/${i}: published ${published} Wh above the truth ${truth}`);
          assert.ok(
            truth - published <= drawnSince + 2 + (i === 0 ? resets.filter((r) => r === id).length * 2 : 0),
            `${id}/${i}: published ${published} Wh, truth ${truth.toFixed(3)} Wh, drawn since ${drawnSince.toFixed(3)} Wh`,
          );
        }
      }
    });

    it("keeps the records out of the leases' list", async () => {
      const leases = new EtcdLeaseStore({
        endpoints: fleet.etcd.endpoints,
        prefix: fleet.prefix,
        ca: fleet.etcd.ca,
      });
      try {
        const list = await leases.list(AbortSignal.timeout(5000));
        assert.ok(list.leases.some((l) => l.name.startsWith("bucket-")));
        assert.ok(!list.leases.some((l) => l.name.startsWith("energy-")), "no record among the leases");
      } finally {
        await leases.close();
      }
      const records = new EtcdLeaseStore({
        endpoints: fleet.etcd.endpoints,
        prefix: `${fleet.prefix}~records/`,
        ca: fleet.etcd.ca,
      });
      try {
        const list = await records.list(AbortSignal.timeout(5000));
        const used = new Set([...fleet.sims.keys()].map((id) => bucketOf(id, BUCKETS)));
        for (const b of used)
          assert.ok(
            list.leases.some((l) => l.name === `energy-${b}` && (l.record?.payload ?? "") !== ""),
            `the record of bucket ${b}`,
          );
      } finally {
        await records.close();
      }
    });
  },
);
