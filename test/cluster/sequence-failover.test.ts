/**
 * A power sequence survives the death of the replica running it: three replicas as real processes
 * on a real 3-member etcd, mosquitto and four simulators; 200 assets with two cords each (on two
 * different PDUs), `MaxConcurrentStarts: 4`. The sequence powering them on is started on one
 * replica, which is killed with `kill -9` halfway through; a survivor finds its journal in etcd,
 * takes it over and finishes it. The simulators' write journals show: the order follows priority,
 * never more than 4 assets start within one start-up time, no cord is written twice, and every
 * cord ends on (but for a step the dead runner left in flight whose outcome is said `unknown`).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ReplicaFleet } from "../../testkit/replica-fleet.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "sequence-failover-key-9a0e21";
const INSTANCES = 4;
const ASSETS = 200;
const MAX_STARTS = 4;
const START_SECONDS = 1;
const NAMES = ["alpha", "bravo", "charlie"];
const instance = (k: number): string => `rack-${String(k % INSTANCES).padStart(3, "0")}`;
const priorityOf = (k: number): number => k % 5;
/** Asset k's two cords: outlet 2m of instance r and outlet 2m+1 of instance r+1 (k = 4m + r). */
const cordsOf = (k: number): [string, number][] => {
  const m = Math.floor(k / INSTANCES);
  const r = k % INSTANCES;
  return [
    [instance(r), 2 * m],
    [instance(r + 1), 2 * m + 1],
  ];
};

interface Progress {
  state: string;
  runner: string;
  assets: { id: string; outcome: string | null }[];
  steps: { asset: string; status: string }[];
  failed: number;
}

describe("a sequence resumed by a survivor after kill -9 of its runner", { timeout: 300_000 }, () => {
  let fleet: ReplicaFleet;
  const assetOf = new Map<string, number>();

  const api = async (replica: string, method: string, path: string, body?: object) => {
    const response = await fetch(`${fleet.get(replica).api!}${path}`, {
      method,
      headers: { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, text, json: <T>() => JSON.parse(text) as T };
  };

  before(async () => {
    fleet = await ReplicaFleet.start({
      instances: INSTANCES,
      buckets: INSTANCES,
      apiKey: KEY,
      outlets: (ASSETS / INSTANCES) * 2,
      extraConfig: (sims) => {
        const lines = ["Sequences: { MaxConcurrentStarts: 4, GapSeconds: 0 }", "Assets:"];
        for (let k = 0; k < ASSETS; k++) {
          lines.push(
            `  a-${k}:`,
            `    Priority: ${priorityOf(k)}`,
            `    StartSeconds: ${START_SECONDS}`,
            "    Cords:",
          );
          for (const [id, outlet] of cordsOf(k))
            lines.push(
              `      - { Instance: ${id}, Device: "${sims.get(id)!.deviceIds()[0]!}", Outlet: ${outlet} }`,
            );
        }
        return lines.join("\n");
      },
    });
    for (let k = 0; k < ASSETS; k++) for (const [id, outlet] of cordsOf(k)) assetOf.set(`${id}/${outlet}`, k);
    await Promise.all(NAMES.map((n) => fleet.add(n)));
    await fleet.balanced(NAMES);
  });
  after(async () => {
    await fleet?.close();
  });

  it("the survivor resumes within the lease time; priority, concurrency and once-only hold", async () => {
    for (const [, sim] of fleet.sims) {
      const dev = sim.deviceIds()[0]!;
      for (let i = 0; i < (ASSETS / INSTANCES) * 2; i++) sim.setOutletState(dev, i, "off");
    }
    const since = Date.now();
    const writes = () =>
      fleet
        .journal()
        .filter((e) => e.time >= since && e.data.action === "on")
        .map((e) => ({
          ...e,
          asset: assetOf.get(`${e.instance}/${Number(/\/outlet\/(\d+)$/.exec(e.path)?.[1])}`),
        }));
    // Every replica answers for its instances first (their first polls).
    await waitFor(
      async () =>
        (await api("alpha", "POST", "/api/v1/sequences", { action: "on", assets: "all", dryRun: true }))
          .status === 200,
      "alpha plans",
      30_000,
    );
    const started = await api("alpha", "POST", "/api/v1/sequences", { action: "on", assets: "all" });
    assert.equal(started.status, 202, started.text);
    const { id } = started.json<{ id: string }>();
    await waitFor(() => writes().length >= ASSETS, "half of the cords written", 120_000, 50);
    await fleet.get("alpha").process.kill();
    const killedAt = Date.now();
    // A survivor resumes it: the head names another runner, and cords are written again.
    const resumed = await waitFor(
      async () => {
        const res = await api("bravo", "GET", `/api/v1/sequences/${id}`);
        if (res.status !== 200) return undefined;
        const body = res.json<Progress>();
        return body.runner.startsWith("alpha/") ? undefined : body;
      },
      "a survivor runs the sequence",
      30_000,
      100,
    );
    assert.ok(["bravo", "charlie"].includes(resumed.runner.split("/")[0]!), resumed.runner);
    const leaseMs = fleet.options.leaseDuration * 1000;
    assert.ok(Date.now() - killedAt < leaseMs + 10_000, "resumed soon after the runner's lease ran out");
    let progress: Progress | null = null;
    await waitFor(
      async () => {
        const res = await api("charlie", "GET", `/api/v1/sequences/${id}`);
        progress = res.json<Progress>();
        return progress.state === "done";
      },
      "the sequence done",
      180_000,
      500,
    );
    const done = writes();
    // No cord written twice.
    const perCord = new Map<string, number>();
    for (const w of done)
      perCord.set(`${w.instance}${w.path}`, (perCord.get(`${w.instance}${w.path}`) ?? 0) + 1);
    assert.deepEqual(
      [...perCord].filter(([, n]) => n > 1),
      [],
      "no cord written twice",
    );
    // Every cord on, but for a step left in flight whose outcome the survivor says is unknown.
    const unknown = new Set(progress!.assets.filter((a) => a.outcome !== "executed").map((a) => a.id));
    assert.ok(unknown.size <= 32, `${unknown.size} assets not executed`);
    for (let k = 0; k < ASSETS; k++) {
      if (unknown.has(`a-${k}`)) continue;
      for (const [inst, outlet] of cordsOf(k)) {
        const sim = fleet.sims.get(inst)!;
        assert.equal(sim.outlet(sim.deviceIds()[0]!, outlet).state, "on", `a-${k}: ${inst} outlet ${outlet}`);
      }
    }
    // Priority order, and at most MaxConcurrentStarts assets within one start-up time.
    const startOf = new Map<number, number>();
    for (const w of done.sort((x, y) => x.time - y.time))
      if (w.asset !== undefined && !startOf.has(w.asset)) startOf.set(w.asset, w.time);
    const order = [...startOf].sort((x, y) => x[1] - y[1]).map(([k]) => priorityOf(k));
    assert.deepEqual(
      order,
      [...order].sort((x, y) => x - y),
      "priority order",
    );
    const times = [...startOf.values()];
    for (const t of times) {
      const starting = times.filter((u) => u >= t && u < t + START_SECONDS * 1000).length;
      assert.ok(starting <= MAX_STARTS, `${starting} assets started within ${START_SECONDS} s`);
    }
  });
});
