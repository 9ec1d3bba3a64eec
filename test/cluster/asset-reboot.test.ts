/**
 * An asset's reboot among three replicas as real processes on a real 3-member etcd, mosquitto and
 * simulators: the asset's two cords are on instances held by two different replicas, and the
 * command is sent to the third, which hands each cord to its holder. Every cord goes off and on
 * exactly once. Then `kill -9` of one cord's holder while its off is at the PDU: the answer names
 * that cord's outcome as unknown, the other cord is done, and nothing is written twice.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { ReplicaFleet } from "../../testkit/replica-fleet.js";
import { waitFor } from "../../testkit/wait.js";

const BUCKETS = 6;
const INSTANCES = 6;
const KEY = "asset-reboot-key-0c7a33e1";
const NAMES = ["alpha", "bravo", "charlie"];

interface CordBody {
  cord: number;
  instanceId: string;
  result: string;
  writes: { action: string; result: string }[];
}
interface Answer {
  status: number;
  body: { outcome?: string; type?: string; detail?: string; cords?: CordBody[] };
}

/** Pair p of instances (i, j), i < j, in order: the asset `p-<i>-<j>`, its cords on outlet p of each. */
function pairs(): { i: number; j: number; p: number }[] {
  const out: { i: number; j: number; p: number }[] = [];
  for (let i = 0; i < INSTANCES; i++)
    for (let j = i + 1; j < INSTANCES; j++) out.push({ i, j, p: out.length });
  return out;
}
const instance = (k: number): string => `rack-${String(k).padStart(3, "0")}`;

describe("asset reboot with cords on two replicas", { timeout: 240_000 }, () => {
  let fleet: ReplicaFleet;
  const deviceOf = (id: string): string => fleet.sims.get(id)!.deviceIds()[0]!;

  const control = async (replica: string, asset: string, action: string): Promise<Answer> => {
    const response = await fetch(`${fleet.get(replica).api!}/api/v1/assets/${asset}/control`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": KEY },
      body: JSON.stringify({ action }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    return { status: response.status, body: (text === "" ? {} : JSON.parse(text)) as Answer["body"] };
  };
  /** The actions executed on outlet `p` of an instance since `since`. */
  const actions = (id: string, p: number, since: number): string[] =>
    fleet
      .journal()
      .filter((e) => e.instance === id && e.time >= since && e.path.endsWith(`/outlet/${p}`))
      .map((e) => String(e.data.action));

  before(async () => {
    fleet = await ReplicaFleet.start({
      instances: INSTANCES,
      buckets: BUCKETS,
      apiKey: KEY,
      outlets: pairs().length,
      // Every cord names its device: a replica reads only the instances it holds.
      extraConfig: (sims) => {
        const lines = ["Assets:"];
        for (const { i, j, p } of pairs()) {
          lines.push(`  p-${i}-${j}:`, "    Cords:");
          for (const k of [i, j]) {
            const id = instance(k);
            lines.push(
              `      - { Instance: ${id}, Device: "${sims.get(id)!.deviceIds()[0]!}", Outlet: ${p} }`,
            );
          }
        }
        return lines.join("\n");
      },
    });
    await Promise.all(NAMES.map((n) => fleet.add(n)));
  });
  after(async () => {
    await fleet?.close();
  });

  /** A pair whose instances two different replicas hold, and the third replica. */
  async function spread(used: Set<number>) {
    const { holders } = await fleet.balanced(NAMES);
    const holderOf = (k: number) => holders.get(bucketOf(instance(k), BUCKETS))!;
    const pair = pairs().find(({ i, j, p }) => !used.has(p) && holderOf(i) !== holderOf(j));
    assert.ok(pair !== undefined, "two instances on two different replicas");
    used.add(pair.p);
    const first = holderOf(pair.i);
    const second = holderOf(pair.j);
    const third = NAMES.find((n) => n !== first && n !== second)!;
    return { ...pair, asset: `p-${pair.i}-${pair.j}`, first, second, third };
  }

  const used = new Set<number>();

  it("every cord off and on exactly once, each by its holder", async () => {
    const { asset, i, j, p, first, second, third } = await spread(used);
    // Until every replica polled its instances: the cords resolve.
    await waitFor(
      async () => (await control(third, asset, "on")).status === 200,
      `${third} switches ${asset} on`,
      30_000,
    );
    const since = Date.now();
    const res = await control(third, asset, "reboot");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.outcome, "executed");
    assert.deepEqual(
      res.body.cords!.map((c) => [c.instanceId, c.result, c.writes.map((w) => w.action).join(",")]),
      [
        [instance(i), "done", "off,on"],
        [instance(j), "done", "off,on"],
      ],
    );
    assert.deepEqual(actions(instance(i), p, since), ["off", "on"]);
    assert.deepEqual(actions(instance(j), p, since), ["off", "on"]);
    const members = fleet
      .journal()
      .filter(
        (e) =>
          e.time >= since &&
          e.path.endsWith(`/outlet/${p}`) &&
          [instance(i), instance(j)].includes(e.instance),
      )
      .map((e) => `${e.instance}:${e.member}`);
    assert.deepEqual(
      [...new Set(members)].sort(),
      [`${instance(i)}:${first}`, `${instance(j)}:${second}`].sort(),
      "each cord written by its instance's holder",
    );
  });

  it("kill -9 of a cord's holder while its off is at the PDU: that cord unknown, nothing twice", async () => {
    const { asset, i, j, p, second, third } = await spread(used);
    await waitFor(
      async () => (await control(third, asset, "on")).status === 200,
      `${third} switches ${asset} on`,
      30_000,
    );
    const sim = fleet.sims.get(instance(j))!;
    const path = `/api/dev/${deviceOf(instance(j))}/outlet/${p}`;
    const posts = () => sim.requests.filter((r) => r.method === "POST" && r.path === path).length;
    const before = posts();
    const since = Date.now();
    // The second cord's PDU holds each request 1.5 s (within the 2 s timeout) before acting on it.
    await sim.setFault("slow:1500");
    const answer = control(third, asset, "reboot");
    try {
      await waitFor(() => posts() > before, `the off of ${asset}'s second cord at its PDU`, 20_000, 5);
      await fleet.get(second).process.kill();
    } finally {
      await sim.setFault(null);
    }
    const res = await answer;
    assert.equal(res.status, 502, JSON.stringify(res.body));
    assert.equal(res.body.outcome, "partial");
    assert.match(res.body.type ?? "", /outcome-unknown$/);
    const [one, two] = res.body.cords!;
    assert.equal(one!.result, "done", JSON.stringify(one));
    assert.deepEqual(
      one!.writes.map((w) => w.action),
      ["off", "on"],
    );
    assert.equal(two!.result, "unknown", JSON.stringify(two));
    assert.deepEqual(two!.writes[0], { ...two!.writes[0], action: "off", result: "unknown" });
    assert.match(
      res.body.detail ?? "",
      new RegExp(`the outcome of cord 2 \\(${instance(j)}/[^ ]+ outlet ${p}\\) is not known`),
    );
    assert.deepEqual(actions(instance(i), p, since), ["off", "on"]);
    const written = actions(instance(j), p, since);
    assert.ok(written.filter((a) => a === "off").length <= 1, `second cord: ${written.join(",")}`);
    assert.ok(written.filter((a) => a === "on").length <= 1, `second cord: ${written.join(",")}`);
  });
});
