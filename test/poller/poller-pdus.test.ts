/**
 * The poller against real simulated PDUs: a dead one (connection refused), a hanging one (never
 * answers) and a healthy one side by side. The healthy one keeps its cadence; the others record
 * their errors and keep their last good snapshot.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { GeistClient, type ClientInstance } from "../../src/pdu/geist/client.js";
import { Poller } from "../../src/poller/scheduler.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { waitFor } from "../../testkit/wait.js";

const INTERVAL_MS = 200;

function instanceFor(id: string, sim: Simulator, timeoutSeconds: number): ClientInstance {
  return {
    id,
    Connection: {
      Host: sim.host,
      Port: sim.port,
      Scheme: sim.scheme,
      Timeout: timeoutSeconds,
      ValidateCertificate: true,
      CaFile: null,
    },
    Credentials: { Username: null, Password: null },
  };
}

const apiPolls = (sim: Simulator) =>
  sim.requests.filter((r) => r.method === "GET" && r.path === "/api").length;

describe("Poller with real PDUs", () => {
  const sims: Record<"healthy" | "dead" | "hanging", Simulator> = {} as never;
  const clients: GeistClient[] = [];

  before(async () => {
    sims.healthy = await startSimulator({ seed: 11, outlets: 4 });
    sims.dead = await startSimulator({ seed: 12, outlets: 4 });
    sims.hanging = await startSimulator({ seed: 13, outlets: 4 });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(Object.values(sims).map((s) => s.close()));
  });

  it("keeps the healthy PDU's cadence while the others fail and keep their snapshots", async () => {
    const ids = ["healthy", "dead", "hanging"] as const;
    const bus = new EventBus();
    const store = new SnapshotStore([...ids], { bus });
    const targets = ids.map((id) => {
      const client = new GeistClient(instanceFor(id, sims[id], 0.5));
      clients.push(client);
      return { id, intervalMs: INTERVAL_MS, poll: (signal: AbortSignal) => client.poll(signal) };
    });
    const poller = new Poller(targets, store, { logger: silentLogger(), bus });
    poller.start();
    // Every instance gets one good snapshot first.
    const deadline = Date.now() + 5000;
    while (ids.some((id) => store.get(id)!.snapshot === null) && Date.now() < deadline) await sleep(20);
    assert.ok(
      ids.every((id) => store.get(id)!.snapshot !== null),
      "all three polled once",
    );

    await sims.dead.setFault("refuse");
    await sims.hanging.setFault("hang");
    // A poll already under way when the fault was set may still succeed: the last good snapshot is
    // the one held once the first failure is in.
    await waitFor(
      () => store.get("dead")!.consecutiveFailures > 0 && store.get("hanging")!.consecutiveFailures > 0,
      "both faulty PDUs failed once",
    );
    const lastGood = Object.fromEntries(ids.map((id) => [id, store.get(id)!.snapshot]));
    const healthyBefore = apiPolls(sims.healthy);
    const windowMs = 2000;
    await sleep(windowMs);
    const healthyPolls = apiPolls(sims.healthy) - healthyBefore;
    await poller.stop();

    // The healthy one kept (most of) its 10 turns in the window; nothing waited on the hanging one.
    assert.ok(
      healthyPolls >= windowMs / INTERVAL_MS - 2,
      `healthy polled ${healthyPolls} times in ${windowMs} ms`,
    );
    assert.equal(store.get("healthy")!.lastError, null);

    const dead = store.get("dead")!;
    assert.match(dead.lastError ?? "", /refused/i);
    assert.ok(dead.consecutiveFailures >= 3, `dead failures ${dead.consecutiveFailures}`);
    assert.equal(dead.snapshot, lastGood.dead, "the dead PDU keeps its last snapshot");

    const hanging = store.get("hanging")!;
    assert.match(hanging.lastError ?? "", /within|time/i);
    assert.ok(hanging.consecutiveFailures >= 1);
    assert.equal(hanging.snapshot, lastGood.hanging, "the hanging PDU keeps its last snapshot");
    assert.ok(hanging.snapshot!.devices[0]!.outlets.length === 4, "and it is not emptied");
    store.close();
  });
});
