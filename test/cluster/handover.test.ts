/**
 * Handovers that Home Assistant does not notice (docs/cluster.md, "Handovers"; docs/mqtt.md,
 * "Discovery among several replicas"): three replicas as real processes on a real 3-member etcd,
 * mosquitto and one simulator per instance, watched from outside by a subscriber that joined after
 * the fleet's discovery was retained.
 *
 * - A rolling restart (SIGTERM each replica in turn, started again once the previous one holds
 *   buckets again): every lease of the stopping replica is released (not left to expire); no instance
 *   is unavailable in Home Assistant's terms (every topic of its discovery's availability `online`)
 *   for longer than one poll interval; no discovery config is written again or cleared; at the end
 *   every instance is polled by exactly one replica.
 * - A `kill -9` and the takeover: discovery stays complete and unchanged; the new holders write only
 *   the configs of their instances that differ from what the broker retains (one altered on purpose)
 *   and clear only ghosts under their own instances, never one under another replica's instance.
 * - Instances no longer configured (their status and configs retained before the replicas start):
 *   their configs are cleared by the holders of their buckets, and no configured instance's config.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { PARENT, ReplicaFleet } from "../../testkit/replica-fleet.js";
import { Recorder, type Received } from "../../testkit/mqtt-client.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const BUCKETS = 8;
const INSTANCES = 16;
const POLL_MS = 1000;
const NAMES = ["r1", "r2", "r3"];

const isConfig = (topic: string) => topic.startsWith("homeassistant/") && topic.endsWith("/config");
/** The instance a config topic belongs to (its node id is `<P>_<instance>`). */
const instanceOf = (topic: string) => new RegExp(`^homeassistant/[^/]+/${PARENT}_([^/]+)/`).exec(topic)?.[1];

/** Latest retained payload per config topic seen by a recorder (empty payloads: cleared). */
function retainedConfigs(messages: readonly Received[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const m of messages) {
    if (!isConfig(m.topic)) continue;
    if (m.payload === "") map.delete(m.topic);
    else map.set(m.topic, m.payload);
  }
  return map;
}

/**
 * A subscriber that joins now, as Home Assistant does: first the availability topics every config
 * names, waiting until each one's retained payload arrived, then the configs, waiting until it holds
 * the `expected` ones. Two subscriptions, not one on `P/#`: mosquitto sends a new subscription's
 * retained messages through the client's queue (`max_queued_messages`, 1000 by default) and drops
 * what does not fit, and the fleet retains more than that under `P/`, so a status could be missing
 * from the start state and read as unavailable.
 */
async function watcher(
  fleet: ReplicaFleet,
  availability: ReadonlyMap<string, readonly string[]>,
  expected: number,
): Promise<Recorder> {
  const w = await Recorder.connect(fleet.mqtt, [`${PARENT}/+/status`, `${PARENT}/$buckets/+/status`]);
  const topics = new Set([...availability.values()].flat());
  await waitFor(
    () => [...topics].every((t) => w.messages.some((m) => m.topic === t)),
    `the retained availability topics (${topics.size})`,
    20_000,
  );
  await w.client.subscribeAsync("homeassistant/#", { qos: 1 });
  await waitFor(
    () => retainedConfigs(w.messages).size >= expected,
    `the retained configs (${expected})`,
    20_000,
  );
  return w;
}

/** Instance id → the topics of its discovery's availability (all its configs name the same ones). */
function availabilityOf(configs: ReadonlyMap<string, string>): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const [topic, payload] of configs) {
    const id = instanceOf(topic) ?? "";
    const parsed = JSON.parse(payload) as { availability?: { topic: string }[]; availability_mode?: string };
    assert.equal(parsed.availability_mode, "all", topic);
    const topics = (parsed.availability ?? []).map((a) => a.topic);
    const known = map.get(id);
    if (known === undefined) map.set(id, topics);
    else assert.deepEqual(known, topics, `one availability per instance (${topic})`);
  }
  return map;
}

/**
 * The longest time (ms) each instance was unavailable in Home Assistant's terms, from the
 * watcher's messages (the retained ones first give the start state) until `end`.
 */
function longestUnavailable(
  messages: readonly Received[],
  availability: ReadonlyMap<string, readonly string[]>,
  end: number,
): Map<string, number> {
  const state = new Map<string, string>();
  const since = new Map<string, number | null>([...availability.keys()].map((id) => [id, null]));
  const longest = new Map<string, number>([...availability.keys()].map((id) => [id, 0]));
  const watched = new Set([...availability.values()].flat());
  const check = (at: number) => {
    for (const [id, topics] of availability) {
      const up = topics.every((t) => state.get(t) === "online");
      const down = since.get(id) ?? null;
      if (!up && down === null) since.set(id, at);
      if (up && down !== null) {
        longest.set(id, Math.max(longest.get(id) ?? 0, at - down));
        since.set(id, null);
      }
    }
  };
  const first = messages[0]?.at ?? end;
  for (const m of messages) {
    if (!watched.has(m.topic)) continue;
    state.set(m.topic, m.payload);
    // The retained set arrives at once on subscribe: judge from its end, not while it streams in.
    if (!m.retain) check(m.at);
  }
  check(end);
  for (const [id, down] of since) {
    if (down !== null) longest.set(id, Math.max(longest.get(id) ?? 0, end - Math.max(down, first)));
  }
  return longest;
}

describe("handovers Home Assistant does not notice", { timeout: 400_000 }, () => {
  let fleet: ReplicaFleet;
  let baseline: Map<string, string>;
  /** Instances no longer configured: their status and configs are retained before any replica starts. */
  const REMOVED = ["gone-a", "gone-b", "gone-c"];
  const removedConfigs = REMOVED.flatMap((id) =>
    ["power", "energy"].map((m) => `homeassistant/sensor/${PARENT}_${id}/outlet_X_0_${m}/config`),
  );
  before(async () => {
    fleet = await ReplicaFleet.start({
      instances: INSTANCES,
      buckets: BUCKETS,
      pollInterval: POLL_MS / 1000,
    });
    for (const id of REMOVED) await fleet.recorder.publish(`${PARENT}/${id}/status`, "offline", true);
    for (const topic of removedConfigs)
      await fleet.recorder.publish(topic, JSON.stringify({ name: "old" }), true);
    await Promise.all(NAMES.map((n) => fleet.add(n)));
    await fleet.balanced(NAMES);
    // Discovery complete and quiet: every instance has configs, and none came for two seconds.
    baseline = await waitFor(
      () => {
        const configs = retainedConfigs(fleet.recorder.messages);
        const instances = new Set([...configs.keys()].map(instanceOf));
        const last = fleet.recorder.messages.findLast((m) => isConfig(m.topic))?.at ?? Date.now();
        return instances.size === INSTANCES && Date.now() - last > 2000 ? configs : undefined;
      },
      "every instance's discovery retained",
      40_000,
    );
  });
  after(async () => {
    await fleet?.close();
  });

  it("instances no longer configured: their configs cleared by their buckets' holders, no other config cleared", () => {
    const cleared = fleet.recorder.messages.filter((m) => isConfig(m.topic) && m.payload === "");
    assert.deepEqual(
      [...new Set(cleared.map((m) => m.topic))].sort(),
      [...removedConfigs].sort(),
      "exactly the removed instances' configs were cleared",
    );
    assert.ok(!REMOVED.some((id) => [...baseline.keys()].some((t) => instanceOf(t) === id)));
    // One info line per removed instance, from replicas that held its bucket (never more clears than configs).
    const lines = NAMES.flatMap((n) =>
      fleet
        .get(n)
        .process.logs()
        .filter(
          (l) =>
            l.msg === "cleared the retained discovery configs of an instance that is no longer configured",
        ),
    );
    assert.deepEqual([...new Set(lines.map((l) => l.instance))].sort(), REMOVED);
    assert.equal(
      lines.reduce((sum, l) => sum + Number(l.cleared), 0),
      removedConfigs.length,
      "each removed config cleared once",
    );
  });

  it("a rolling restart (SIGTERM in turn): leases released, nothing unavailable beyond a poll interval, no config written, one poller each", async () => {
    const availability = availabilityOf(baseline);
    assert.equal(availability.size, INSTANCES);
    const w = await watcher(fleet, availability, baseline.size);
    try {
      const watchFrom = w.messages.length;
      for (const name of NAMES) {
        const before = await fleet.holders();
        const held = [...before].filter(([, m]) => m === name).map(([b]) => b);
        assert.ok(held.length > 0, `${name} holds buckets before its restart`);
        const replica = fleet.get(name).process;
        replica.signal("SIGTERM");
        const exit = await replica.waitForExit(15_000);
        assert.equal(exit.code, 0, `${name} exits cleanly`);
        // Released, not left to expire: no lease names it any more the moment it has exited.
        const released = await fleet.holders();
        assert.deepEqual(
          [...released].filter(([, m]) => m === name),
          [],
          `${name} released its leases before exiting`,
        );
        const others = NAMES.filter((n) => n !== name);
        await fleet.balanced(others, 10_000);
        await fleet.add(name);
        await fleet.balanced(NAMES);
      }
      await sleep(2 * POLL_MS);
      const end = Date.now();
      const watched = w.messages.slice(watchFrom);
      // (b) No discovery config written again, with content or empty, in the whole rolling restart.
      const written = watched.filter((m) => isConfig(m.topic));
      assert.deepEqual(
        written.map((m) => `${m.topic} ${m.payload === "" ? "(cleared)" : "(written)"}`),
        [],
        "no discovery config published during the rolling restart",
      );
      // Stricter than the contract: no availability topic said `offline` at all. A handover ends the
      // bucket's connection with a DISCONNECT before the lease is released (no will), and the new
      // holder publishes an instance's status from its first poll (never `offline` for lack of one).
      const watchedTopics = new Set([...availability.values()].flat());
      assert.deepEqual(
        watched.filter((m) => watchedTopics.has(m.topic) && m.payload !== "online").map((m) => m.topic),
        [],
        "no availability topic went offline",
      );
      assert.ok(
        watched.some((m) => m.topic.includes("/$buckets/") && m.payload === "online"),
        "the new holders announced their buckets",
      );
      // (a) No instance unavailable in Home Assistant's terms for more than one poll interval.
      const longest = longestUnavailable(w.messages, availability, end);
      const over = [...longest].filter(([, ms]) => ms > POLL_MS);
      assert.deepEqual(over, [], "instances unavailable longer than a poll interval (ms)");
      // (c) Every instance polled by exactly one replica, the holder of its bucket.
      const { holders, since } = await fleet.steadyWindow(NAMES, 3 * POLL_MS);
      for (const [id, members] of fleet.pollers(since)) {
        assert.deepEqual(members, [holders.get(bucketOf(id, BUCKETS))], `pollers of ${id}`);
      }
    } finally {
      await w.close();
    }
  });

  it("kill -9 and takeover: discovery complete and unchanged; only the new holders' own differing configs and ghosts are written", async () => {
    const { holders } = await fleet.balanced(NAMES);
    const victim = "r2";
    const bucketsOfVictim = new Set([...holders].filter(([, m]) => m === victim).map(([b]) => b));
    const ids = [...fleet.sims.keys()];
    const victims = ids.filter((id) => bucketsOfVictim.has(bucketOf(id, BUCKETS)));
    const survivor = ids.find((id) => !bucketsOfVictim.has(bucketOf(id, BUCKETS)));
    assert.ok(victims.length > 0 && survivor !== undefined);
    const configOf = (id: string) => [...baseline].find(([t]) => instanceOf(t) === id)!;
    // What the broker retains is altered under a victim instance (one config's content, one ghost)
    // and under an instance of a surviving replica (a ghost nobody takes over).
    const [alteredTopic, alteredPayload] = configOf(victims[0]!);
    const ghostOfVictim = `homeassistant/sensor/${PARENT}_${victims[0]!}/gone_outlet_power/config`;
    const ghostOfSurvivor = `homeassistant/sensor/${PARENT}_${survivor}/gone_outlet_power/config`;
    const planted = JSON.stringify({ name: "gone" });
    await fleet.recorder.publish(alteredTopic, alteredPayload.replace(/"name":"/, '"name":"x'), true);
    await fleet.recorder.publish(ghostOfVictim, planted, true);
    await fleet.recorder.publish(ghostOfSurvivor, planted, true);
    const w = await watcher(fleet, availabilityOf(baseline), baseline.size + 2);
    try {
      const watchFrom = w.messages.length;
      await fleet.get(victim).process.kill();
      const others = NAMES.filter((n) => n !== victim);
      await fleet.balanced(others);
      // Its instances polled by the new holders, and their discovery checked.
      const since = Date.now();
      await waitFor(
        () => victims.every((id) => (fleet.pollers(since).get(id) ?? []).some((m) => others.includes(m))),
        "the victim's instances polled again",
        20_000,
      );
      await waitFor(
        () => w.messages.slice(watchFrom).some((m) => m.topic === ghostOfVictim && m.payload === ""),
        "the ghost under a taken-over instance cleared",
        20_000,
      );
      await sleep(2 * POLL_MS);
      const written = w.messages.slice(watchFrom).filter((m) => isConfig(m.topic));
      assert.deepEqual(
        written
          .map(
            (m) =>
              `${m.topic} ${m.payload === alteredPayload ? "(restored)" : m.payload === "" ? "(cleared)" : m.payload}`,
          )
          .sort(),
        [`${alteredTopic} (restored)`, `${ghostOfVictim} (cleared)`].sort(),
        "only the altered config and the taken-over instance's ghost are written",
      );
      // Complete and unchanged: a fresh subscriber sees exactly the baseline, plus the ghost
      // under the surviving replica's instance, which nobody clears while it holds the instance.
      const fresh = await watcher(fleet, availabilityOf(baseline), baseline.size + 1);
      try {
        await sleep(500);
        const now = retainedConfigs(fresh.messages);
        assert.equal(now.get(ghostOfSurvivor), planted);
        now.delete(ghostOfSurvivor);
        assert.deepEqual(now, baseline);
      } finally {
        await fresh.close();
      }
      // Every bucket in use is online again.
      const used = new Set(ids.map((id) => bucketOf(id, BUCKETS)));
      await waitFor(
        () => [...used].every((b) => w.last(`${PARENT}/$buckets/${b}/status`)?.payload === "online"),
        "every bucket in use online",
        20_000,
      );
    } finally {
      await w.close();
      await fleet.recorder.publish(ghostOfSurvivor, "", true);
    }
  });

  it("SIGTERM of the last replicas: handed over while another is alive, unavailable once the last one left", async () => {
    const left = [...fleet.replicas.keys()].filter((n) => fleet.get(n).process.exit === null);
    assert.equal(left.length, 2, left.join(", "));
    const [first, last] = left as [string, string];
    const used = [...new Set([...fleet.sims.keys()].map((id) => bucketOf(id, BUCKETS)))];
    const status = (b: number) => fleet.recorder.last(`${PARENT}/$buckets/${b}/status`)?.payload;
    await waitFor(() => used.every((b) => status(b) === "online"), "every bucket in use online", 20_000);
    const from = fleet.recorder.messages.length;
    fleet.get(first).process.signal("SIGTERM");
    await fleet.get(first).process.waitForExit(15_000);
    await fleet.balanced([last], 10_000);
    await sleep(POLL_MS);
    assert.deepEqual(
      fleet.recorder.messages
        .slice(from)
        .filter((m) => m.topic.includes("/$buckets/") && m.payload !== "online"),
      [],
      "handed over to the last replica: no bucket offline",
    );
    fleet.get(last).process.signal("SIGTERM");
    await fleet.get(last).process.waitForExit(15_000);
    await waitFor(
      () => used.every((b) => status(b) === "offline"),
      "every bucket offline once no replica is left",
      10_000,
    );
  });
});
