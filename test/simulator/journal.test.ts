/**
 * The simulator's write journal and its count of readers per replica: what the cluster tests read
 * from outside to count actuations and pollers. The bridge's Geist client names its replica in
 * every request (X-Pdu-Bridge-Member) when it is given one.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MEMBER_HEADER } from "../../src/pdu/driver.js";
import { GeistClient, type ClientInstance } from "../../src/pdu/geist/client.js";
import { findDevice } from "../../src/pdu/model.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";

function instanceFor(sim: Simulator): ClientInstance {
  return {
    id: "pdu1",
    Connection: {
      Host: sim.host,
      Port: sim.port,
      Scheme: sim.scheme,
      Timeout: 10,
      ValidateCertificate: true,
      CaFile: null,
    },
    Credentials: { Username: "admin", Password: "admin" },
  };
}

describe("the simulator's write journal", () => {
  let sim: Simulator;
  let a: GeistClient;
  let b: GeistClient;
  let anonymous: GeistClient;
  before(async () => {
    sim = await startSimulator({ devices: 2, outlets: 4, rebootMs: null });
    a = new GeistClient(instanceFor(sim), { member: "replica-a" });
    b = new GeistClient(instanceFor(sim), { member: "replica-b" });
    anonymous = new GeistClient(instanceFor(sim));
  });
  after(async () => {
    await Promise.all([a.close(), b.close(), anonymous.close()]);
    await sim.close();
  });

  it("journals every executed write with the replica that sent it, in order, and nothing refused", async () => {
    const snapshot = await a.poll();
    const [first, second] = snapshot.devices;
    assert.ok(first && second);
    await a.controlOutlet({ deviceId: first.id, index: 0, route: first.route }, "reboot");
    await b.controlOutlet({ deviceId: first.id, index: 1, route: first.route }, "off");
    await anonymous.resetOutletEnergy({ deviceId: second.id, index: 2, route: second.route });
    // Refused by the unit: not executed, so not journalled (the request log still has it).
    sim.setOutletControlEnabled(second.id, false);
    await assert.rejects(b.controlOutlet({ deviceId: second.id, index: 0, route: second.route }, "on"));
    const journal = sim.journal();
    assert.deepEqual(
      journal.map((e) => [e.member, e.cmd, e.path, e.data]),
      [
        ["replica-a", "control", `/api/dev/${first.id}/outlet/0`, { action: "reboot", delay: false }],
        ["replica-b", "control", `/api/dev/${first.id}/outlet/1`, { action: "off", delay: false }],
        [null, "reset", `/api/dev/${second.id}/outlet/2`, { target: "energy" }],
      ],
    );
    assert.ok(journal.every((e, k) => k === 0 || e.time >= (journal[k - 1]?.time ?? 0)));
    assert.ok(findDevice(snapshot, first.id), "the journal's device is the polled one");
    const refused = sim.writes().filter((r) => r.member === "replica-b" && r.path.includes(second.id));
    assert.equal(refused.length, 1, "the refused write is in the request log");
    // Logins are requests of the replica too, never journalled writes.
    assert.ok(sim.requests.some((r) => r.cmd === "login" && r.member === "replica-a"));
    assert.ok(!journal.some((e) => e.cmd === "login"));
  });

  it("counts reads per replica since a time", async () => {
    const since = Date.now();
    await a.poll();
    await a.poll();
    await b.poll();
    const pollers = sim.pollers(since);
    assert.equal(pollers.get("replica-a"), 2);
    assert.ok((pollers.get("replica-b") ?? 0) >= 1, "its first poll also asks whether OneView is on");
    assert.equal(pollers.has(null), false);
    assert.ok((sim.pollers().get("replica-a") ?? 0) >= 3, "without a time: every read kept");
  });

  it("records a member header that is not a plain name as (invalid), not as sent", async () => {
    const res = await fetch(`${sim.url}/api`, { headers: { [MEMBER_HEADER]: "a b/../c" } });
    await res.arrayBuffer();
    assert.equal(sim.requests.at(-1)?.member, "(invalid)");
  });
});
