/**
 * Several replicas as real processes sharing a fleet (docs/cluster.md, "What is tested"): a real
 * 3-member etcd, mosquitto, one simulator per instance, and the service started N times with only
 * its member name different. Everything is read from outside: which replica polled and wrote which
 * PDU (the simulators' readers and journals, by the X-Pdu-Bridge-Member header), the bucket leases
 * in etcd, MQTT as a subscriber sees it.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { PARENT, ReplicaFleet } from "../../testkit/replica-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const BUCKETS = 16;

describe("three replicas share 60 instances on etcd", { timeout: 300_000 }, () => {
  let fleet: ReplicaFleet;
  before(async () => {
    fleet = await ReplicaFleet.start({ instances: 60, buckets: BUCKETS });
    await Promise.all(["r1", "r2", "r3"].map((n) => fleet.add(n)));
  });
  after(async () => {
    await fleet?.close();
  });

  it("every instance is polled by exactly one replica, the holder of its bucket; buckets within one of even", async () => {
    // Every replica says it is ready (its MQTT connection is up) in its member lease.
    await waitFor(
      async () => {
        const members = await fleet.members();
        return ["r1", "r2", "r3"].every((n) => members.get(n) === true) || undefined;
      },
      "every replica's member lease saying ready",
      30_000,
    );
    const { counts } = await fleet.balanced(["r1", "r2", "r3"]);
    assert.ok(
      [...counts.values()].every((n) => n === 5 || n === 6),
      JSON.stringify([...counts]),
    );
    // Steady state: a window of three poll intervals with no bucket changing hands.
    const { holders, since } = await fleet.steadyWindow(["r1", "r2", "r3"]);
    const { by, wrong } = fleet.pollersIn(since);
    assert.deepEqual(wrong, [], "each instance polled by exactly one replica");
    const { bucketOf } = await import("../../src/cluster/assign.js");
    for (const [id, member] of by) assert.equal(member, holders.get(bucketOf(id, BUCKETS)), id);
  });

  it("availability: every instance's discovery names its bucket's status, and every bucket in use is online", async () => {
    const { bucketOf } = await import("../../src/cluster/assign.js");
    const used = new Set([...fleet.sims.keys()].map((id) => bucketOf(id, BUCKETS)));
    await waitFor(
      () =>
        [...used].every((b) => fleet.recorder.last(`${PARENT}/$buckets/${b}/status`)?.payload === "online"),
      "every bucket in use online",
      20_000,
    );
    const id = [...fleet.sims.keys()][0]!;
    const config = fleet.recorder.messages.find(
      (m) =>
        m.topic.startsWith(`homeassistant/`) &&
        m.topic.includes(`${PARENT}_${id}`) &&
        m.topic.endsWith("/config"),
    );
    assert.ok(config, "a discovery config of the instance");
    const availability = (JSON.parse(config.payload) as { availability: { topic: string }[] }).availability;
    assert.deepEqual(
      availability.map((a) => a.topic),
      [`${PARENT}/$buckets/${bucketOf(id, BUCKETS)}/status`, `${PARENT}/${id}/status`],
    );
  });

  it("kill -9 of a holder: its instances are polled again by the others, no write by a replica not holding the lease, every MQTT reboot once at most", async () => {
    const { holders } = await fleet.balanced(["r1", "r2", "r3"]);
    const { bucketOf } = await import("../../src/cluster/assign.js");
    const victims = [...fleet.sims.keys()].filter((id) => holders.get(bucketOf(id, BUCKETS)) === "r2");
    assert.ok(victims.length > 0);
    // A reboot per victim instance over MQTT, around the kill.
    const deviceOf = (id: string) => fleet.sims.get(id)!.deviceIds()[0]!;
    const send = (id: string) =>
      fleet.recorder.client.publishAsync(`${PARENT}/${id}/${deviceOf(id)}/outlets/1/reboot`, "", { qos: 1 });
    const firstHalf = victims.slice(0, Math.ceil(victims.length / 2));
    await Promise.all(firstHalf.map(send));
    await waitFor(
      () =>
        firstHalf.every((id) => fleet.journal().some((e) => e.instance === id && e.data.action === "reboot")),
      "the reboots sent before the kill executed",
      10_000,
    );
    await fleet.get("r2").process.kill();
    const killedAt = Date.now();
    await Promise.all(victims.slice(firstHalf.length).map(send));
    const after = await fleet.steadyWindow(["r1", "r3"]);
    for (const id of victims) assert.notEqual(after.holders.get(bucketOf(id, BUCKETS)), "r2");
    const since = after.since;
    const { by, wrong } = fleet.pollersIn(since);
    assert.deepEqual(wrong, [], "each instance polled by exactly one replica again");
    for (const id of victims) assert.notEqual(by.get(id), "r2");
    // The journal: reboots at most once per instance, and r2 wrote nothing after it was killed.
    const reboots = fleet.journal().filter((e) => e.data.action === "reboot");
    for (const id of victims) {
      assert.ok(reboots.filter((e) => e.instance === id).length <= 1, `at most one reboot of ${id}`);
    }
    assert.deepEqual(
      reboots.filter((e) => e.member === "r2" && e.time > killedAt),
      [],
      "nothing written by the killed replica",
    );
    for (const e of fleet.journal()) {
      assert.ok(e.member === "r1" || e.member === "r2" || e.member === "r3", JSON.stringify(e));
    }
    // Every reboot sent before the kill reached the PDU once (r2 held them and was up).
    for (const id of firstHalf) {
      assert.equal(reboots.filter((e) => e.instance === id).length, 1, `reboot of ${id} before the kill`);
    }
  });

  it("a fourth replica joining moves at most ceil(Buckets/4) + 2 buckets, all to it", async () => {
    await fleet.add("r2b");
    const before = (await fleet.balanced(["r1", "r3", "r2b"])).holders;
    await fleet.add("r4");
    const after = (await fleet.balanced(["r1", "r3", "r2b", "r4"])).holders;
    const moved = [...after].filter(([b, m]) => before.get(b) !== m);
    assert.ok(moved.length <= Math.ceil(BUCKETS / 4) + 2, `moved ${moved.length}`);
    assert.ok(
      moved.every(([, m]) => m === "r4"),
      JSON.stringify(moved),
    );
  });

  it("SIGSTOP of a holder past its lease with commands queued, then SIGCONT: the resumed replica writes and polls nothing it lost", async () => {
    const names = ["r1", "r3", "r2b", "r4"];
    const { holders } = await fleet.balanced(names);
    const { bucketOf } = await import("../../src/cluster/assign.js");
    const victims = [...fleet.sims.keys()].filter((id) => holders.get(bucketOf(id, BUCKETS)) === "r3");
    assert.ok(victims.length > 0);
    const paused = fleet.get("r3").process;
    paused.signal("SIGSTOP");
    const stoppedAt = Date.now();
    // Every replica hears these; only r3 held the instances, and it is paused: they wait in its socket.
    const deviceOf = (id: string) => fleet.sims.get(id)!.deviceIds()[0]!;
    await Promise.all(
      victims.map((id) =>
        fleet.recorder.client.publishAsync(`${PARENT}/${id}/${deviceOf(id)}/outlets/0/reboot`, "", {
          qos: 1,
        }),
      ),
    );
    const others = names.filter((n) => n !== "r3");
    const taken = await waitFor(
      async () => {
        const now = await fleet.holders();
        return victims.every((id) => others.includes(now.get(bucketOf(id, BUCKETS)) ?? "")) ? now : undefined;
      },
      "the paused replica's buckets taken over",
      30_000,
    );
    assert.ok(taken.size > 0);
    await sleep(1000);
    paused.signal("SIGCONT");
    const resumedAt = Date.now();
    // Less than its settling time: whatever it does now comes from before the pause.
    await sleep(700);
    const reads = victims.flatMap((id) => (fleet.sims.get(id)!.pollers(resumedAt).has("r3") ? [id] : []));
    assert.deepEqual(reads, [], "no poll by the resumed replica of what it lost");
    await sleep(2000);
    const writes = fleet
      .journal()
      .filter((e) => e.time > stoppedAt && e.data.action === "reboot" && victims.includes(e.instance));
    assert.deepEqual(writes, [], "the queued reboots were not executed by anyone");
    assert.equal(paused.exit, null, "the resumed replica keeps running");
  });
});
