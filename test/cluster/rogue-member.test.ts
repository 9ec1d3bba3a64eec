/**
 * Whoever can write the installation's prefix in etcd (docs/cluster.md, "Advertised URLs are
 * checked"): two replicas as real processes, and a rogue writer in the test that advertises a member
 * of its own, takes one bucket's lease and keeps renewing it, with a server standing at its URL that
 * answers every request "ok". Control of an instance in that bucket, sent to the real replicas, is
 * never answered "ok": the rogue cannot sign for the request (502 outcome-unknown), nothing is
 * written to the PDU, the rogue never sees the client's API key; once the rogue advertises a URL
 * outside `Cluster.PeerNetworks` nothing more is sent to it (503 not-held).
 */
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import type { LeaseRecord } from "../../src/cluster/store.js";
import { ReplicaFleet } from "../../testkit/replica-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const BUCKETS = 2;
const KEY = "rogue-member-key-4c7e2b19";
const NAMES = ["real1", "real2"];
const ROGUE = "rogue/0123456789ab";

describe("a rogue member in the coordination engine", { timeout: 240_000 }, () => {
  let fleet: ReplicaFleet;
  const seen: { path: string; headers: IncomingHttpHeaders }[] = [];
  const rogue = createServer((request, response) => {
    seen.push({ path: request.url ?? "", headers: request.headers });
    request.resume();
    request.on("end", () => {
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          outcome: { ok: true, status: 200, instanceId: "x", target: { kind: "device", deviceId: "x" } },
        }),
      );
    });
  });
  let stop = false;
  let renewing: Promise<void> = Promise.resolve();

  before(async () => {
    await new Promise<void>((resolve) => rogue.listen(0, "127.0.0.1", resolve));
    // The replicas accept advertised URLs on 127.0.0.1 only.
    fleet = await ReplicaFleet.start({
      instances: 4,
      buckets: BUCKETS,
      apiKey: KEY,
      peerNetworks: ["127.0.0.1/32"],
    });
    await Promise.all(NAMES.map((n) => fleet.add(n)));
    await fleet.balanced(NAMES);
  });
  after(async () => {
    stop = true;
    await renewing;
    await fleet?.close();
    await new Promise((resolve) => rogue.close(resolve));
  });

  /** Writes the rogue's member lease and `bucket`'s lease, and keeps both renewed until the end. */
  const takeOver = (bucket: number, url: () => string) => {
    const leases = fleet.leases;
    const write = async (name: string, payload: string) => {
      const time = new Date().toISOString();
      const record: LeaseRecord = {
        holder: ROGUE,
        durationSeconds: 3,
        acquireTime: time,
        renewTime: time,
        transitions: 1,
        payload,
      };
      const current = await leases.get(name, AbortSignal.timeout(5000));
      if (current === null) await leases.create(name, record, AbortSignal.timeout(5000));
      else await leases.update(name, record, current.version, AbortSignal.timeout(5000));
    };
    renewing = (async () => {
      while (!stop) {
        await write("member-rogue", JSON.stringify({ ready: true, buckets: BUCKETS, url: url() })).catch(
          () => {},
        );
        await write(`bucket-${bucket}`, "{}").catch(() => {});
        await sleep(300);
      }
    })();
  };

  it("its 'ok' is never believed, it never sees the API key, and a URL outside PeerNetworks is never sent anything", async () => {
    const id = [...fleet.sims.keys()][0]!;
    const bucket = bucketOf(id, BUCKETS);
    const deviceId = fleet.sims.get(id)!.deviceIds()[0]!;
    let url = `http://127.0.0.1:${(rogue.address() as AddressInfo).port}`;
    takeOver(bucket, () => url);
    await waitFor(
      async () => (await fleet.holders()).get(bucket) === "rogue",
      "the rogue holds the bucket",
      20_000,
    );
    const since = Date.now();
    const control = (replica: string) =>
      fetch(`${fleet.get(replica).api!}/api/v1/instances/${id}/outlets/${deviceId}/0/control`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": KEY },
        body: JSON.stringify({ action: "off" }),
      });
    // Both replicas see the rogue as the holder: control goes to it, and its answer is refused.
    await waitFor(
      async () => {
        const answers = await Promise.all(NAMES.map(control));
        const bodies = await Promise.all(answers.map((a) => a.json() as Promise<{ type?: string }>));
        return answers.every((a, k) => a.status === 502 && /outcome-unknown$/.test(bodies[k]!.type ?? ""));
      },
      "502 outcome-unknown from both replicas",
      20_000,
    );
    const read = await fetch(`${fleet.get(NAMES[0]!).api!}/api/v1/readings?instance=${id}`, {
      headers: { "x-api-key": KEY },
    });
    assert.equal(read.status, 503, "a read it answered without a signature is not passed on");
    assert.ok(seen.length > 0, "the rogue was asked");
    for (const request of seen) {
      assert.equal(request.headers["x-api-key"], undefined, "no API key to the rogue");
      assert.ok(!JSON.stringify(request.headers).includes(KEY));
    }
    assert.deepEqual(
      fleet.journal().filter((e) => e.time >= since && e.instance === id),
      [],
      "nothing written to the PDU",
    );
    // Outside PeerNetworks (127.0.0.2 is loopback, not 127.0.0.1/32): never sent anything.
    url = `http://127.0.0.2:${(rogue.address() as AddressInfo).port}`;
    await waitFor(
      async () => (await control(NAMES[0]!)).status === 503,
      "503 once the rogue's URL is outside PeerNetworks",
      20_000,
    );
    const count = seen.length;
    for (const name of NAMES) assert.equal((await control(name)).status, 503);
    assert.equal(seen.length, count, "nothing sent to a URL outside PeerNetworks");
    await waitFor(
      () =>
        fleet
          .get(NAMES[0]!)
          .process.logs()
          .some((l) => /outside Cluster\.PeerNetworks/.test(String(l.msg))),
      "the refused URL logged",
      5000,
    );
  });
});
