/**
 * The ownership seam (src/ownership.ts): each part asks the one `Ownership` it is given, so that a
 * process polls, takes commands for and writes to only the instances it owns, and an instance it
 * takes over (`ownershipChanged` on the bus) is polled at once. Single-process mode owns them all.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus, type ControlEvent } from "../src/bus.js";
import { createControlService } from "../src/control/service.js";
import type { ControlOutcome, ControlRequest } from "../src/control/types.js";
import { silentLogger } from "../src/log.js";
import { CommandHandler } from "../src/mqtt/commands.js";
import { Topics } from "../src/mqtt/topics.js";
import { OWN_ALL, type Ownership } from "../src/ownership.js";
import { Poller } from "../src/poller/scheduler.js";
import { SnapshotStore } from "../src/poller/store.js";
import { startControlHarness, type ControlHarness } from "../testkit/control-harness.js";
import { LogCapture } from "../testkit/log-capture.js";
import { mqttTestConfig } from "../testkit/mqtt-config.js";
import { snapshotWith } from "../testkit/snapshot-builders.js";
import { waitFor } from "../testkit/wait.js";

/** Owns the ids in `owned` (a set the test changes). */
const owning = (owned: Set<string>): Ownership => ({ owns: (id) => owned.has(id) });

describe("ownership", () => {
  it("the default owns every instance", () => {
    assert.equal(OWN_ALL.owns("anything"), true);
  });

  it("the poller polls only the owned instances, and one taken over at once", async () => {
    const owned = new Set(["mine"]);
    const polls = new Map<string, number>([
      ["mine", 0],
      ["theirs", 0],
    ]);
    const targets = [...polls.keys()].map((id) => ({
      id,
      intervalMs: 400,
      poll: () => {
        polls.set(id, (polls.get(id) ?? 0) + 1);
        return Promise.resolve(snapshotWith(id, Date.now(), ["on"]));
      },
    }));
    const bus = new EventBus();
    const store = new SnapshotStore([...polls.keys()], { bus });
    const poller = new Poller(targets, store, { logger: silentLogger(), bus, ownership: owning(owned) });
    poller.start();
    try {
      // Two turns of the owned one: the other's first turn (half an interval in) has passed.
      await waitFor(() => (polls.get("mine") ?? 0) >= 2, "the owned instance's polls");
      assert.equal(polls.get("theirs"), 0, "the instance it does not own is not polled");
      assert.equal(store.get("theirs")?.lastPollUtc, null);
      owned.add("theirs");
      bus.emit("ownershipChanged", { gained: ["theirs"], lost: [] });
      await waitFor(() => (polls.get("theirs") ?? 0) >= 1, "the instance taken over polled");
    } finally {
      await poller.stop();
      store.close();
    }
  });

  it("the MQTT command handler leaves an instance it does not own to its owner: no call, no audit", async () => {
    const config = await mqttTestConfig({ instances: { mine: true, theirs: true } });
    const capture = new LogCapture();
    const bus = new EventBus();
    const events: ControlEvent[] = [];
    bus.on("control", (e) => events.push(e));
    const requests: ControlRequest[] = [];
    const handler = new CommandHandler({
      topics: new Topics("pdu-bridge"),
      instances: config.instances,
      logger: capture.logger,
      bus,
      ownership: owning(new Set(["mine"])),
    });
    handler.attach({
      execute: (request): Promise<ControlOutcome> => {
        requests.push(request);
        return Promise.resolve({
          ok: true,
          status: 200,
          instanceId: request.instanceId,
          target: request.target,
          action: request.action,
          outlets: [],
        });
      },
    });
    await handler.handle("pdu-bridge/theirs/DEV1/outlets/0/set", Buffer.from("off"), false);
    assert.equal(requests.length, 0, "the control core was not called");
    assert.equal(capture.audits.length, 0, "no audit line");
    assert.equal(events.length, 0, "no control event");
    await handler.handle("pdu-bridge/mine/DEV1/outlets/0/set", Buffer.from("off"), false);
    assert.deepEqual(
      requests.map((r) => r.instanceId),
      ["mine"],
    );
    assert.equal(capture.audits.length, 1);
    assert.deepEqual(
      events.map((e) => [e.instanceId, e.status, e.fromCore]),
      [["mine", 200, true]],
    );
  });

  describe("the control core", () => {
    let h: ControlHarness;
    before(async () => {
      h = await startControlHarness({
        sim: { outlets: 2 },
        instances: [{ id: "mine" }, { id: "theirs" }],
        poll: ["mine", "theirs"],
      });
    });
    after(async () => {
      await h?.close();
    });

    it("writes only to an instance it owns; another's command is refused (503) and nothing is sent", async () => {
      const core = createControlService({
        config: h.config,
        store: h.store,
        clients: h.clients,
        ownership: owning(new Set(["mine"])),
        pollSoon: () => undefined,
        logger: silentLogger(),
      });
      const device = h.sim.deviceIds()[0]!;
      const request = (instanceId: string) =>
        core.execute({
          instanceId,
          target: { kind: "outlet", deviceId: device, index: 0 },
          action: "off",
          source: { surface: "rest", client: "127.0.0.1" },
        });
      h.sim.clearRequests();
      const refused = await request("theirs");
      assert.equal(refused.status, 503, JSON.stringify(refused));
      assert.deepEqual(h.sim.writes(), []);
      const done = await request("mine");
      assert.equal(done.status, 200, JSON.stringify(done));
      assert.equal(h.sim.writes().length, 1);
      await core.stop();
    });
  });
});
