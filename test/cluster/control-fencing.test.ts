/**
 * The control core behind the cluster's fence, on a real etcd and the real simulator: every PDU
 * write of a command or a settings write waits for a grant (a conditional renewal of the instance's
 * lease); a replica that does not hold the instance, or whose lease ran out, sends nothing (503
 * `not-held`); a reboot or resetStats carries a once-only id from its command id, so the same
 * command never runs twice, on the same holder or after a takeover. The simulator's journal, with
 * each write's replica, is read to count actuations.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, afterEach, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import type { Cluster } from "../../src/cluster/index.js";
import { createControlService, type ControlCore } from "../../src/control/service.js";
import type { ControlOutcome, ControlTarget } from "../../src/control/types.js";
import { silentLogger } from "../../src/log.js";
import { OWN_ALL } from "../../src/ownership.js";
import { GeistClient } from "../../src/pdu/geist/client.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { configFor } from "../../testkit/control-harness.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { Fleet } from "../../testkit/cluster-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

let etcd: EtcdCluster;
let sim: Simulator;
before(async () => {
  etcd = await EtcdCluster.start({ members: 1 });
  sim = await startSimulator({ outlets: 4, rebootMs: null });
});
after(async () => {
  await sim?.close();
  await etcd?.close();
});

interface Replica {
  readonly name: string;
  readonly cluster: Cluster;
  readonly core: ControlCore;
  readonly client: GeistClient;
  readonly store: SnapshotStore;
}

let fleet: Fleet | null = null;
const replicas: Replica[] = [];
afterEach(async () => {
  for (const r of replicas.splice(0)) {
    await r.core.stop();
    r.store.close();
    await r.client.close();
  }
  const f = fleet;
  fleet = null;
  await f?.close();
  assert.deepEqual(f?.overlaps.slice(0, 5) ?? [], [], "never two holders at once");
});

/**
 * Two replicas of one bucket, each with a control core fenced by its own cluster. `trusting`
 * cores own every instance (as a replica that has not yet heard it lost the bucket would): only
 * the fence stands between them and the PDU.
 */
async function twoReplicas(options: { trusting?: boolean } = {}) {
  const prefix = `/control-fencing-${randomUUID()}/`;
  const f = new Fleet(
    () => new EtcdLeaseStore({ endpoints: etcd.endpoints, prefix, attemptTimeoutMs: 400 }),
    {
      buckets: 1,
    },
  );
  fleet = f;
  const config = await configFor(sim, [{ id: "rack" }]);
  const instance = config.instances[0]!;
  for (const name of ["alpha", "beta"]) {
    const { cluster } = await f.add(name);
    const client = new GeistClient(instance, { member: name });
    const store = new SnapshotStore(["rack"], { bus: new EventBus() });
    store.recordSuccess("rack", await client.poll());
    const core = createControlService({
      config,
      store,
      clients: new Map([["rack", client]]),
      ownership: options.trusting === true ? OWN_ALL : { owns: (id) => cluster.holds(id) },
      fence: cluster,
      pollSoon: () => undefined,
      logger: silentLogger(),
    });
    replicas.push({ name, cluster, core, client, store });
  }
  const holderName = await waitFor(() => f.holders().get(0)?.[0], "the bucket held");
  const holder = replicas.find((r) => r.name === holderName)!;
  const other = replicas.find((r) => r.name !== holderName)!;
  return { f, holder, other, deviceId: sim.deviceIds()[0]! };
}

const run = (
  r: Replica,
  target: ControlTarget,
  action: string,
  commandId?: string,
): Promise<ControlOutcome> =>
  r.core.execute({
    instanceId: "rack",
    target,
    action,
    source: { surface: "rest", client: "127.0.0.1" },
    ...(commandId === undefined ? {} : { commandId }),
  });

const rebootsOf = (index: number) =>
  sim.journal().filter((e) => e.path.endsWith(`/outlet/${index}`) && e.data.action === "reboot");

describe("control behind the cluster's fence", () => {
  it("the holder writes, naming itself; a replica that does not hold the instance sends nothing", async () => {
    const { holder, other, deviceId } = await twoReplicas({ trusting: true });
    const before = sim.journal().length;
    const done = await run(holder, { kind: "outlet", deviceId, index: 0 }, "off");
    assert.equal(done.status, 200, JSON.stringify(done));
    const refused = await run(other, { kind: "outlet", deviceId, index: 1 }, "off");
    assert.equal(refused.status, 503, JSON.stringify(refused));
    assert.ok(!refused.ok && refused.problem === "not-held" && refused.retryAfter !== undefined);
    const settings = await other.core.applySettings({
      instanceId: "rack",
      target: { kind: "outlet", deviceId, index: 1 },
      settings: { label: "fenced" },
      source: { surface: "rest", client: "127.0.0.1" },
    });
    assert.equal(settings.status, 503, JSON.stringify(settings));
    const journal = sim.journal().slice(before);
    assert.deepEqual(
      journal.map((e) => [e.member, e.path]),
      [[holder.name, `/api/dev/${deviceId}/outlet/0`]],
    );
  });

  it("a resetStats command id runs once: the same id again is outcome unknown and sends nothing", async () => {
    const { holder, deviceId } = await twoReplicas();
    const target: ControlTarget = { kind: "outlet", deviceId, index: 2 };
    const resets = () => sim.journal().filter((e) => e.cmd === "reset" && e.path.endsWith("/outlet/2"));
    const first = await run(holder, target, "resetStats", "cmd-once-1");
    assert.equal(first.status, 200, JSON.stringify(first));
    const again = await run(holder, target, "resetStats", "cmd-once-1");
    assert.equal(again.status, 502, JSON.stringify(again));
    assert.ok(!again.ok && again.problem === "outcome-unknown");
    const other = await run(holder, target, "resetStats", "cmd-once-2");
    assert.equal(other.status, 200, JSON.stringify(other));
    assert.deepEqual(
      resets().map((e) => e.member),
      [holder.name, holder.name],
      "one reset per command id",
    );
  });

  it("a new holder never runs a reboot its predecessor ran", async () => {
    const { f, holder, other, deviceId } = await twoReplicas();
    const target: ControlTarget = { kind: "outlet", deviceId, index: 3 };
    const before = rebootsOf(3).length;
    const first = await run(holder, target, "reboot", "cmd-takeover-1");
    assert.equal(first.status, 200, JSON.stringify(first));
    f.halt(holder.name);
    await waitFor(() => other.cluster.holds("rack"), "the other replica takes the bucket over", 20_000);
    const retried = await run(other, target, "reboot", "cmd-takeover-1");
    assert.equal(retried.status, 502, JSON.stringify(retried));
    assert.ok(!retried.ok && retried.problem === "outcome-unknown");
    // Another command (another outlet: this one is within its reboot delay) runs at the new holder.
    const fresh = await run(other, { kind: "outlet", deviceId, index: 1 }, "reboot", "cmd-takeover-2");
    assert.equal(fresh.status, 200, JSON.stringify(fresh));
    assert.deepEqual(
      rebootsOf(3)
        .slice(before)
        .map((e) => e.member),
      [holder.name],
      "the retried reboot ran once, at the first holder",
    );
    assert.equal(rebootsOf(1).at(-1)?.member, other.name);
  });

  it("a holder whose renewals stopped (frozen) writes nothing once its deadline passed", async () => {
    const { f, holder, deviceId } = await twoReplicas({ trusting: true });
    f.halt(holder.name);
    await sleep(f.timings.RenewDeadlineSeconds * 1000 + 200);
    const before = sim.journal().length;
    const late = await run(holder, { kind: "outlet", deviceId, index: 0 }, "on");
    assert.equal(late.status, 503, JSON.stringify(late));
    assert.equal(sim.journal().length, before, "nothing written");
  });
});
