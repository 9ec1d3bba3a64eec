/**
 * The reboot hold across holders (docs/cluster.md, "The reboot hold"): two replicas as real
 * processes on a real 3-member etcd with TLS and authentication, mosquitto and simulators; the outlet under test gets a 20 s
 * reboot delay through the bridge's own settings write.
 * A reboot carried out by one holder records the outlet's hold with the bucket's lease; the replica
 * that takes the bucket over (after a SIGTERM handover, or after a `kill -9` and the lease's expiry)
 * reads it before its first write, and refuses a new reboot of that outlet (409) until the hold has
 * passed, while the first reboot's outlet is still off. A reboot of another outlet runs.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { ReplicaFleet } from "../../testkit/replica-fleet.js";
import { waitFor } from "../../testkit/wait.js";

const BUCKETS = 2;
const KEY = "reboot-hold-key-3e9a51c0";
/** The reboot delay given to outlet 0 (s): the outlet stays off this long, and is held as long. */
const REBOOT_DELAY_S = 20;

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

describe("a reboot is never run again within its delay by the next holder", { timeout: 240_000 }, () => {
  let fleet: ReplicaFleet;
  let generation = 0;
  const used = new Set<string>();
  const deviceOf = (id: string) => fleet.sims.get(id)!.deviceIds()[0]!;
  const control = async (replica: string, id: string, index: number, action: string): Promise<Answer> => {
    const response = await fetch(
      `${fleet.get(replica).api!}/api/v1/instances/${id}/outlets/${deviceOf(id)}/${index}/control`,
      {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": KEY },
        body: JSON.stringify({ action }),
        signal: AbortSignal.timeout(30_000),
      },
    );
    const text = await response.text();
    return {
      status: response.status,
      body: (text === "" ? {} : JSON.parse(text)) as Record<string, unknown>,
    };
  };
  const reboots = (id: string, index: number, since: number) =>
    fleet
      .journal()
      .filter(
        (e) =>
          e.instance === id &&
          e.time >= since &&
          e.data.action === "reboot" &&
          e.path.includes(`/outlet/${index}`),
      );

  /** Two replicas; the one holding the first bucket with an instance, and that instance. */
  const pair = async () => {
    // Not `b<n>`: the client id of bucket n's availability connection is `<ClientId>-b<n>`.
    const names = [`first${generation}`, `second${generation}`];
    generation++;
    await Promise.all(names.map((n) => fleet.add(n)));
    const { holders } = await fleet.balanced(names);
    // An instance no earlier case rebooted: the bucket's lease still holds those outlets.
    const id = [...fleet.sims.keys()].find(
      (i) => !used.has(i) && names.includes(holders.get(bucketOf(i, BUCKETS)) ?? ""),
    )!;
    used.add(id);
    const holder = holders.get(bucketOf(id, BUCKETS))!;
    const other = names.find((n) => n !== holder)!;
    await waitFor(
      async () => (await control(holder, id, 1, "on")).status === 200,
      `${holder} answers for ${id}`,
      20_000,
    );
    // Outlet 0's reboot delay, written through the bridge, then polled back twice by the holder.
    const patched = await fetch(
      `${fleet.get(holder).api!}/api/v1/instances/${id}/outlets/${deviceOf(id)}/0`,
      {
        method: "PATCH",
        headers: { "content-type": "application/json", "x-api-key": KEY },
        body: JSON.stringify({ rebootDelay: REBOOT_DELAY_S }),
      },
    );
    assert.equal(patched.status, 200, await patched.text());
    const sim = fleet.sims.get(id)!;
    assert.equal(sim.outlet(deviceOf(id), 0).rebootDelay, REBOOT_DELAY_S);
    const at = Date.now();
    await waitFor(() => (sim.pollers(at).get(holder) ?? 0) >= 2, `${holder} polled ${id} again`, 20_000);
    return { names, id, holder, other };
  };

  /** After the takeover: the survivor holds the instance and answers for it (not 503). */
  const takenOver = (other: string, id: string) =>
    waitFor(
      async () => {
        const holders = await fleet.holders();
        if (holders.get(bucketOf(id, BUCKETS)) !== other) return undefined;
        const answer = await control(other, id, 1, "on");
        return answer.status === 200 ? answer : undefined;
      },
      `${other} holds ${id} and answers for it`,
      30_000,
    );

  before(async () => {
    // etcd as production runs it: TLS with a private CA and authentication.
    fleet = await ReplicaFleet.start({ instances: 4, buckets: BUCKETS, apiKey: KEY, etcdSecure: true });
  });
  after(async () => {
    await fleet?.close();
  });

  it("SIGTERM of the holder right after a reboot (a rolling restart): the next holder refuses a reboot of that outlet within its delay", async () => {
    const { id, holder, other } = await pair();
    const since = Date.now();
    // Sent to the replica that does not hold it: forwarded, as a client behind a Service would.
    const first = await control(other, id, 0, "reboot");
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const sentAt = Date.now();
    fleet.get(holder).process.signal("SIGTERM");
    await fleet.get(holder).process.waitForExit(20_000);
    await takenOver(other, id);
    const elapsed = Date.now() - sentAt;
    assert.ok(elapsed < REBOOT_DELAY_S * 1000, `the takeover came within the delay (${elapsed} ms)`);
    const second = await control(other, id, 0, "reboot");
    assert.equal(second.status, 409, JSON.stringify(second.body));
    assert.match(String(second.body.detail), /reboot delay/);
    assert.equal(reboots(id, 0, since).length, 1, "the outlet rebooted once");
    // Another outlet of the same instance is not held.
    const elsewhere = await control(other, id, 1, "reboot");
    assert.equal(elsewhere.status, 200, JSON.stringify(elsewhere.body));
    await fleet.get(other).process.kill();
    fleet.replicas.clear();
  });

  it("kill -9 of the holder right after a reboot: the replica taking the expired lease over refuses a reboot of that outlet within its delay", async () => {
    const { id, holder, other } = await pair();
    const since = Date.now();
    const first = await control(holder, id, 0, "reboot");
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const sentAt = Date.now();
    await fleet.get(holder).process.kill();
    await takenOver(other, id);
    // A client retrying at once after the takeover (the lease expired: 3 s, and a round).
    const second = await control(other, id, 0, "reboot");
    const secondAt = Date.now() - sentAt;
    assert.ok(secondAt < REBOOT_DELAY_S * 1000, `the retry came within the delay (${secondAt} ms)`);
    assert.equal(second.status, 409, `${secondAt} ms after the first: ${JSON.stringify(second.body)}`);
    assert.equal(reboots(id, 0, since).length, 1, "the outlet rebooted once");
    // Once the hold has passed, the outlet may be rebooted again.
    await waitFor(
      async () => (await control(other, id, 0, "reboot")).status === 200,
      "a reboot after the hold",
      60_000,
    );
    assert.equal(reboots(id, 0, since).length, 2);
  });
});
