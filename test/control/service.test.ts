import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createControlService } from "../../src/control/service.js";
import type { ControlOutcome, ControlTarget, SettingsTarget } from "../../src/control/types.js";
import { silentLogger } from "../../src/log.js";
import { findGroup } from "../../src/pdu/model.js";
import type { OutletRef, RecordedRequest } from "../../src/simulator/index.js";
import { startControlHarness, waitFor, type ControlHarness } from "../../testkit/control-harness.js";

const outlet = (deviceId: string, index: number): ControlTarget => ({ kind: "outlet", deviceId, index });
const group = (groupKey: string): ControlTarget => ({ kind: "group", groupKey });
const outletPath = (deviceId: string, index: number) => `/api/dev/${deviceId}/outlet/${index}`;

function refused(outcome: ControlOutcome, status: number): Extract<ControlOutcome, { ok: false }> {
  assert.equal(outcome.ok, false, `expected ${status}, got ${JSON.stringify(outcome)}`);
  if (outcome.ok) throw new Error("unreachable");
  assert.equal(outcome.status, status, outcome.detail);
  return outcome;
}

function done(outcome: ControlOutcome): Extract<ControlOutcome, { ok: true }> {
  assert.equal(outcome.ok, true, `expected 200, got ${JSON.stringify(outcome)}`);
  if (!outcome.ok) throw new Error("unreachable");
  assert.equal(outcome.status, 200);
  return outcome;
}

function bodyOf(write: RecordedRequest): { cmd: unknown; token: unknown; data: unknown } {
  assert.ok(typeof write.body === "object" && write.body !== null, "write has a JSON body");
  const { cmd, token, data } = write.body as Record<string, unknown>;
  return { cmd, token, data };
}

/** Real (relay) state of every outlet of every device, keyed `deviceId/index`. */
function realStates(h: ControlHarness, outlets: number): Map<string, string> {
  const states = new Map<string, string>();
  for (const id of h.sim.deviceIds())
    for (let i = 0; i < outlets; i++) states.set(`${id}/${i}`, h.sim.outlet(id, i).state);
  return states;
}

describe("control core on a single PDU", () => {
  let h: ControlHarness;
  let dev: string;

  before(async () => {
    h = await startControlHarness({
      sim: { outlets: 8, stateLagMs: 60_000, users: { admin: "admin", ops: "s3cret-pw" } },
      // Relay protection off where outlets switch in quick succession (test/app/relay-protection.test.ts).
      instances: [
        { id: "pdu1", relayProtection: 0 },
        { id: "locked", actionsEnabled: false },
        { id: "fresh", pollInterval: 2.5 },
        { id: "quick", timeout: 0.3, relayProtection: 0 },
        { id: "patient", timeout: 30, relayProtection: 0 },
        { id: "ops", username: "ops", password: "s3cret-pw" },
      ],
      poll: ["pdu1", "locked", "quick", "patient", "ops"],
    });
    const [first] = h.sim.deviceIds();
    assert.ok(first !== undefined);
    dev = first;
  });
  after(async () => {
    await h?.close();
  });
  beforeEach(() => {
    h.sim.clearRequests();
    h.pollSoonCalls.length = 0;
  });

  it("refuses every invalid request, in the documented order, without sending anything", async () => {
    const cases: [string, string, ControlTarget, string, number, string[]][] = [
      ["unknown action", "pdu1", outlet(dev, 0), "toggle", 400, ['"toggle"', "on, off, reboot, resetStats"]],
      ["resetStats on a group", "pdu1", group("2"), "resetStats", 400, ["on, off, reboot", "outlet-only"]],
      ["bad action before unknown instance", "nope", outlet(dev, 0), "toggle", 400, ['"toggle"']],
      ["unknown instance", "nope", outlet(dev, 0), "on", 404, ['"nope"', "pdu1, locked, fresh"]],
      ["actions disabled", "locked", outlet(dev, 0), "off", 409, ["set Pdus.locked.ActionsEnabled: true"]],
      ["disabled before unknown device", "locked", outlet("NOPE", 0), "off", 409, ["ActionsEnabled"]],
      ["not polled yet", "fresh", outlet(dev, 0), "on", 503, ["not been polled", "3 s"]],
      ["not polled before unknown device", "fresh", outlet("NOPE", 0), "on", 503, ["not been polled"]],
      ["unknown device", "pdu1", outlet("NOPE", 0), "on", 404, ['device "NOPE"', dev]],
      [
        "unknown outlet",
        "pdu1",
        outlet(dev, 8),
        "on",
        404,
        [`${dev} of instance pdu1 has no outlet 8`, "0-7"],
      ],
      ["no groups on a single unit", "pdu1", group("2"), "on", 404, ['group "2"', "no groups"]],
    ];
    const before = realStates(h, 8);
    for (const [name, instanceId, target, action, status, details] of cases) {
      const outcome = refused(await h.run(instanceId, target, action), status);
      for (const text of details) assert.ok(outcome.detail.includes(text), `${name}: ${outcome.detail}`);
      if (status === 503) assert.equal(outcome.retryAfter, 3, `${name}: ceil(PollInterval 2.5)`);
    }
    assert.deepEqual(h.sim.writes(), [], "no write reached the PDU");
    assert.deepEqual(
      h.sim.requests.filter((r) => r.method === "POST"),
      [],
      "not even a login",
    );
    assert.deepEqual(realStates(h, 8), before, "no outlet changed");
    assert.deepEqual(h.pollSoonCalls, []);
  });

  it("on: switches the outlet, latches the commanded state and asks for an early poll", async () => {
    assert.equal(h.sim.outlet(dev, 3).state, "off");
    const outcome = done(await h.run("pdu1", outlet(dev, 3), "on"));
    assert.deepEqual(outcome.outlets, [{ deviceId: dev, index: 3, ok: true }]);
    assert.deepEqual(outcome.target, outlet(dev, 3));
    assert.equal(outcome.action, "on");

    const sim = h.sim.outlet(dev, 3);
    assert.equal(sim.state, "on", "the relay switched");
    assert.equal(sim.reportedState, "off", "the PDU still reports the old state");
    const writes = h.sim.writes();
    assert.equal(writes.length, 1);
    const [write] = writes;
    assert.ok(write);
    assert.equal(write.path, outletPath(dev, 3));
    assert.equal(write.port, h.sim.port);
    const body = bodyOf(write);
    assert.equal(body.cmd, "control");
    assert.equal(typeof body.token, "string");
    assert.deepEqual(body.data, { action: "on", delay: false });

    assert.equal(h.storeState("pdu1", dev, 3), "on", "latched");
    const polled = await h.poll("pdu1");
    assert.equal(polled.devices[0]?.outlets[3]?.state, "off", "a new poll still reads off");
    assert.equal(h.storeState("pdu1", dev, 3), "on", "the latch outlives a poll that disagrees");
    assert.deepEqual(h.pollSoonCalls, [{ instanceId: "pdu1", delayMs: 1000 }]);
  });

  it("off: matches the instance id ignoring case and reports the configured id", async () => {
    const outcome = done(await h.run("PDU1", outlet(dev, 0), "off"));
    assert.equal(outcome.instanceId, "pdu1");
    assert.equal(h.sim.outlet(dev, 0).state, "off");
    assert.equal(h.sim.outlet(dev, 0).reportedState, "on");
    const [write] = h.sim.writes();
    assert.ok(write);
    assert.deepEqual(bodyOf(write).data, { action: "off", delay: false });
    assert.equal(h.storeState("pdu1", dev, 0), "off");
    assert.deepEqual(h.pollSoonCalls, [{ instanceId: "pdu1", delayMs: 1000 }]);
  });

  it("reboot: power-cycles the outlet (it ends on) and is not latched", async () => {
    assert.equal(h.sim.outlet(dev, 7).state, "off");
    done(await h.run("pdu1", outlet(dev, 7), "reboot"));
    const [write] = h.sim.writes();
    assert.ok(write);
    assert.equal(write.path, outletPath(dev, 7));
    assert.deepEqual(bodyOf(write).data, { action: "reboot", delay: false });
    await waitFor(() => h.sim.outlet(dev, 7).state === "on", "the rebooted outlet to come back on");
    assert.equal(h.storeState("pdu1", dev, 7), "off", "no latch: the store shows what the PDU reported");
    assert.deepEqual(h.pollSoonCalls, [{ instanceId: "pdu1", delayMs: 1000 }]);
  });

  it("resetStats: resets the outlet's energy and leaves its state alone", async () => {
    h.sim.setEnergy(dev, 2, 500);
    done(await h.run("pdu1", outlet(dev, 2), "resetStats"));
    const [write] = h.sim.writes();
    assert.ok(write);
    assert.equal(write.path, outletPath(dev, 2));
    assert.equal(bodyOf(write).cmd, "reset");
    assert.deepEqual(bodyOf(write).data, { target: "energy" });
    const energy = h.sim.outlet(dev, 2).energyKwh;
    assert.ok(energy < 0.01, `energy reset to 0, now ${energy}`);
    assert.equal(h.sim.outlet(dev, 2).state, "on");
    assert.equal(h.storeState("pdu1", dev, 2), "on");
  });

  it("a wrong password is a 502 that says why, without any password", async () => {
    h.sim.setPassword("ops", "rotated-pw");
    try {
      const outcome = refused(await h.run("ops", outlet(dev, 1), "off"), 502);
      assert.match(
        outcome.detail,
        /^off on outlet \S+\/1 of instance ops: login to PDU .* failed: wrong password/,
      );
      assert.ok(
        !outcome.detail.includes("s3cret-pw") && !outcome.detail.includes("rotated-pw"),
        outcome.detail,
      );
      assert.equal(h.sim.outlet(dev, 1).state, "on", "the outlet did not switch");
      assert.deepEqual(h.sim.writes(), []);
      assert.equal(h.storeState("ops", dev, 1), "on", "nothing latched");
      assert.deepEqual(h.pollSoonCalls, [], "nothing changed, no early poll");
    } finally {
      h.sim.setPassword("ops", "s3cret-pw");
    }
  });

  it("a PDU refusal is a 502 with the PDU's message", async () => {
    h.sim.setOutletControlEnabled(dev, false);
    try {
      const outcome = refused(await h.run("pdu1", outlet(dev, 1), "off"), 502);
      assert.ok(outcome.detail.includes("outlet control disabled"), outcome.detail);
      assert.ok(outcome.detail.includes("retCode 2003"), outcome.detail);
      assert.equal(h.sim.writes().length, 1, "the write was sent");
      assert.equal(h.sim.outlet(dev, 1).state, "on", "and refused");
      assert.equal(h.storeState("pdu1", dev, 1), "on", "nothing latched");
    } finally {
      h.sim.setOutletControlEnabled(dev, true);
    }
  });

  it("409 before any write when the polled device reports outletControlEnabled: false", async () => {
    h.sim.setOutletControlEnabled(dev, false);
    try {
      await h.poll("pdu1");
      h.sim.clearRequests();
      for (const action of ["on", "off", "reboot", "resetStats"]) {
        const outcome = refused(await h.run("pdu1", outlet(dev, 1), action), 409);
        assert.ok(outcome.detail.includes("disabled on the PDU itself"), outcome.detail);
        assert.ok(outcome.detail.includes("conf.outletControlEnabled: false"), outcome.detail);
      }
      assert.deepEqual(h.sim.requests, [], "nothing sent, not even a login");
      assert.deepEqual(h.pollSoonCalls, []);
    } finally {
      h.sim.setOutletControlEnabled(dev, true);
      await h.poll("pdu1");
    }
    done(await h.run("pdu1", outlet(dev, 1), "on"));
  });

  it("a PDU that does not answer a write in time is a 504", async () => {
    done(await h.run("quick", outlet(dev, 4), "on")); // logs in while the PDU still answers
    h.sim.clearRequests();
    await h.sim.setFault("hang");
    try {
      const outcome = refused(await h.run("quick", outlet(dev, 4), "off"), 504);
      assert.ok(outcome.detail.includes("did not answer in time"), outcome.detail);
      assert.ok(outcome.detail.includes("within 0.3s"), outcome.detail);
      assert.deepEqual(
        h.sim.writes().map((w) => w.path),
        [outletPath(dev, 4)],
        "the write reached the PDU",
      );
      assert.equal(h.sim.outlet(dev, 4).state, "on", "but was never carried out");
      assert.equal(h.storeState("quick", dev, 4), "on", "nothing latched");
    } finally {
      await h.sim.setFault(null);
    }
  });

  it("serialises commands to the same outlet: the second write starts after the first is answered", async () => {
    assert.equal(h.sim.outlet(dev, 6).state, "on");
    await h.sim.setFault("slow:200");
    try {
      const first = h.run("pdu1", outlet(dev, 6), "off");
      const second = h.run("pdu1", outlet(dev, 6), "on");
      done(await first);
      assert.deepEqual(
        h.sim.writes().map((w) => bodyOf(w).data),
        [{ action: "off", delay: false }],
        "when the first command is done, the second has not been sent",
      );
      assert.equal(h.sim.outlet(dev, 6).state, "off");
      done(await second);
      const writes = h.sim.writes();
      assert.deepEqual(
        writes.map((w) => [w.path, bodyOf(w).data]),
        [
          [outletPath(dev, 6), { action: "off", delay: false }],
          [outletPath(dev, 6), { action: "on", delay: false }],
        ],
      );
      assert.equal(h.sim.outlet(dev, 6).state, "on", "the last command wins on the PDU");
      assert.equal(h.storeState("pdu1", dev, 6), "on", "and in the store");
    } finally {
      await h.sim.setFault(null);
    }
  });

  it("a settings write takes the outlet's turn after a running switch; one that comes meanwhile is the next burst", async () => {
    const service = h.service;
    assert.ok(typeof service.applySettings === "function", "the core writes settings");
    const settings = (settings: Record<string, unknown>) =>
      service.applySettings!({
        instanceId: "pdu1",
        target: outlet(dev, 5),
        settings,
        source: { surface: "rest", client: "test" },
      });
    await h.sim.setFault("slow:200");
    try {
      const off = h.run("pdu1", outlet(dev, 5), "off");
      const delay = settings({ offDelay: 4 });
      // The target's write is under way: the next one waits for it and its second (./settings-bursts.ts).
      const next = settings({ onDelay: 9 });
      done(await off);
      const written = await delay;
      assert.deepEqual(written, {
        ok: true,
        status: 200,
        instanceId: "pdu1",
        target: outlet(dev, 5),
        settings: { offDelay: 4 },
      });
      const third = await next;
      assert.equal(third.ok, true, JSON.stringify(third));
      assert.deepEqual(
        h.sim.writes().map((w) => [w.path, bodyOf(w).cmd, bodyOf(w).data]),
        [
          [outletPath(dev, 5), "control", { action: "off", delay: false }],
          [outletPath(dev, 5), "set", { offDelay: 4 }],
          [outletPath(dev, 5), "set", { onDelay: 9 }],
        ],
        "the settings writes went after the switch, one after the other",
      );
      assert.equal(h.sim.outlet(dev, 5).offDelay, 4);
      assert.equal(h.sim.outlet(dev, 5).onDelay, 9);
      assert.ok(h.pollSoonCalls.length >= 2, "an early poll shows the new value");
    } finally {
      await h.sim.setFault(null);
    }
  });

  it("settings: bad values, fields the target does not take and ActionsEnabled: false send nothing", async () => {
    const apply = (instanceId: string, target: SettingsTarget, settings: Record<string, unknown>) =>
      h.service.applySettings!({ instanceId, target, settings, source: { surface: "rest", client: "test" } });
    const cases: [string, SettingsTarget, Record<string, unknown>, number][] = [
      ["pdu1", outlet(dev, 1), { onDelay: "10" }, 400],
      ["pdu1", outlet(dev, 1), {}, 400],
      ["pdu1", { kind: "device", deviceId: dev }, { rebootDelay: 5 }, 400],
      ["pdu1", outlet(dev, 1), { label: "x".repeat(33) }, 400],
      ["pdu1", { kind: "entity", deviceId: dev, entityKey: "nope" }, { label: "x" }, 404],
      ["locked", outlet(dev, 1), { label: "x" }, 409],
    ];
    for (const [instanceId, target, settings, status] of cases) {
      const outcome = await apply(instanceId, target, settings);
      assert.equal(outcome.status, status, `${JSON.stringify(settings)}: ${JSON.stringify(outcome)}`);
    }
    assert.deepEqual(h.sim.writes(), []);
  });

  it("on a hard stop, in-flight writes to different outlets end as outcome unknown (502), never 200 nor 'retry'", async () => {
    done(await h.run("patient", outlet(dev, 5), "on")); // logs in while the PDU still answers
    h.sim.clearRequests();
    h.pollSoonCalls.length = 0;
    const shutdown = new AbortController();
    const stopping = createControlService({
      config: h.config,
      store: h.store,
      clients: h.clients,
      pollSoon: (instanceId, delayMs) => h.pollSoonCalls.push({ instanceId, delayMs }),
      logger: silentLogger(),
      signal: shutdown.signal,
    });
    const request = (target: ControlTarget, action: string) =>
      stopping.execute({ instanceId: "patient", target, action, source: { surface: "mqtt", topic: "t" } });
    await h.sim.setFault("hang");
    try {
      const a = request(outlet(dev, 5), "off");
      const b = request(outlet(dev, 4), "off");
      // Both writes are in the PDU's hands at once: different outlets are not serialised.
      await waitFor(() => h.sim.writes().length === 2, "both writes to reach the PDU");
      shutdown.abort();
      for (const outcome of [await a, await b]) {
        const r = refused(outcome, 502);
        assert.equal(r.problem, "outcome-unknown");
        assert.equal(r.retryAfter, undefined, "no Retry-After: it may have been carried out");
        assert.match(r.detail, /the service stopped while the write was in progress/);
        assert.match(r.detail, /check the outlet before retrying/i);
      }
      const late = refused(await request(outlet(dev, 4), "off"), 503);
      assert.ok(late.detail.includes("was not sent"), late.detail);
      assert.equal(h.sim.writes().length, 2, "nothing sent after the abort");
      assert.equal(h.sim.outlet(dev, 5).state, "on");
      assert.equal(h.sim.outlet(dev, 4).state, "on");
      assert.equal(h.storeState("patient", dev, 5), "on", "nothing latched");
      assert.deepEqual(h.pollSoonCalls, []);
    } finally {
      await h.sim.setFault(null);
    }
  });
});

describe("control core on a OneView cluster (master + 2 members)", () => {
  let h: ControlHarness;
  const OUTLETS = 4;
  /** device id -> the port of the unit that owns it */
  const portOf = new Map<string, number>();
  const key = (r: OutletRef) => `${r.deviceId}/${r.index}`;

  before(async () => {
    h = await startControlHarness({
      sim: { oneview: { members: 2 }, outlets: OUTLETS, stateLagMs: 60_000 },
      instances: [
        { id: "cluster", relayProtection: 0 },
        { id: "cquick", timeout: 0.3, relayProtection: 0 },
      ],
    });
    h.sim.setGroupMembers("9", []);
    await h.poll("cluster");
    await h.poll("cquick");
    for (const unit of h.sim.units) for (const id of unit.deviceIds) portOf.set(id, unit.port);
    assert.equal(new Set(portOf.values()).size, 3, "three units, three ports");
  });
  after(async () => {
    await h?.close();
  });
  beforeEach(() => {
    h.sim.clearRequests();
    h.pollSoonCalls.length = 0;
  });

  it("a group action writes to exactly its member outlets, each through its own unit's port", async () => {
    const members = h.sim.groupMembers("2");
    assert.equal(members.length, 6, "outlets 0 and 1 of each unit's first device");
    const snapshot = h.store.get("cluster")?.snapshot;
    assert.ok(snapshot);
    assert.deepEqual(findGroup(snapshot, "2")?.members.map(key).sort(), members.map(key).sort());
    const before = realStates(h, OUTLETS);

    const outcome = done(await h.run("cluster", group("2"), "off"));
    assert.deepEqual(outcome.target, group("2"));
    assert.deepEqual(
      outcome.outlets.map((o) => `${key(o)} ${o.ok}`).sort(),
      members.map((m) => `${key(m)} true`).sort(),
    );

    const writes = h.sim.writes();
    assert.deepEqual(
      writes.map((w) => `${w.port} ${w.path}`).sort(),
      members.map((m) => `${portOf.get(m.deviceId)} ${outletPath(m.deviceId, m.index)}`).sort(),
      "one write per member, on the port of the unit that owns it",
    );
    for (const w of writes) assert.deepEqual(bodyOf(w).data, { action: "off", delay: false });

    const memberKeys = new Set(members.map(key));
    for (const [k, state] of realStates(h, OUTLETS)) {
      assert.equal(state, memberKeys.has(k) ? "off" : before.get(k), `outlet ${k}`);
    }
    for (const m of members) {
      assert.equal(h.sim.outlet(m.deviceId, m.index).reportedState, "on", "the PDU still reports on");
      assert.equal(h.storeState("cluster", m.deviceId, m.index), "off", "latched");
    }
    assert.deepEqual(h.pollSoonCalls, [{ instanceId: "cluster", delayMs: 1000 }], "one early poll");
  });

  it("a group with a failing member PDU is a 502 naming what failed and what succeeded", async () => {
    const members = h.sim.groupMembers("3");
    const failing = h.sim.units[2];
    assert.ok(failing);
    const isFailing = (m: OutletRef) => failing.deviceIds.includes(m.deviceId);
    const bad = members.filter(isFailing);
    const good = members.filter((m) => !isFailing(m));
    assert.equal(bad.length, 2);
    assert.equal(good.length, 4);
    const before = realStates(h, OUTLETS);
    await h.sim.setFault("http500", 2);
    try {
      const outcome = refused(await h.run("cluster", group("3"), "on"), 502);
      assert.ok(outcome.outlets, "per-outlet results");
      assert.deepEqual(
        outcome.outlets.map((o) => `${key(o)} ${o.ok}`).sort(),
        members.map((m) => `${key(m)} ${!isFailing(m)}`).sort(),
      );
      for (const o of outcome.outlets.filter((r) => !r.ok)) assert.match(o.error ?? "", /HTTP 500/);
      assert.ok(outcome.detail.includes("failed on 2 of 6 outlets"), outcome.detail);
      for (const m of bad) assert.ok(outcome.detail.includes(key(m)), `${key(m)} named: ${outcome.detail}`);
      const succeeded = outcome.detail.split("succeeded on: ")[1] ?? "";
      for (const m of good) assert.ok(succeeded.includes(key(m)), `${key(m)} listed as succeeded`);

      for (const m of good) {
        assert.equal(h.sim.outlet(m.deviceId, m.index).state, "on");
        assert.equal(h.storeState("cluster", m.deviceId, m.index), "on", "succeeded outlets are latched");
      }
      for (const m of bad) {
        assert.equal(h.sim.outlet(m.deviceId, m.index).state, before.get(key(m)), "failed outlets unchanged");
      }
      const offBefore = bad.find((m) => before.get(key(m)) === "off");
      assert.ok(offBefore, "outlet 3 of the failing unit was off");
      assert.equal(h.storeState("cluster", offBefore.deviceId, offBefore.index), "off", "and is not latched");
      assert.deepEqual(h.pollSoonCalls, [{ instanceId: "cluster", delayMs: 1000 }]);
    } finally {
      await h.sim.setFault(null);
    }
  });

  it("a group whose every member times out is a 504", async () => {
    const members = h.sim.groupMembers("2");
    const before = realStates(h, OUTLETS);
    await h.sim.setFault("hang");
    try {
      const outcome = refused(await h.run("cquick", group("2"), "on"), 504);
      assert.ok(outcome.detail.includes("did not answer in time"), outcome.detail);
      assert.ok(outcome.outlets);
      assert.equal(outcome.outlets.length, members.length);
      assert.ok(outcome.outlets.every((o) => !o.ok));
      assert.deepEqual(realStates(h, OUTLETS), before, "nothing switched");
      assert.deepEqual(h.pollSoonCalls, []);
    } finally {
      await h.sim.setFault(null);
    }
  });

  it("a group action takes each member's lock: an outlet command to a member waits for that write", async () => {
    const [member] = h.sim.groupMembers("2");
    assert.ok(member);
    const path = outletPath(member.deviceId, member.index);
    const slowMs = 300;
    await h.sim.setFault(`slow:${slowMs}`);
    try {
      const groupOn = h.run("cluster", group("2"), "on");
      const memberOff = h.run("cluster", outlet(member.deviceId, member.index), "off");
      done(await groupOn);
      done(await memberOff);
      const writes = h.sim.writes().filter((w) => w.path === path);
      assert.deepEqual(
        writes.map((w) => bodyOf(w).data),
        [
          { action: "on", delay: false },
          { action: "off", delay: false },
        ],
      );
      const [on, off] = writes;
      assert.ok(on && off);
      // Ordering evidence on the simulator's clock: the PDU answered the group's write slowMs after
      // receiving it, and the member's own write arrived only after that answer (sent together,
      // they would arrive a few ms apart).
      assert.ok(off.time - on.time >= slowMs / 2, `second write ${off.time - on.time} ms after the first`);
      assert.equal(h.sim.outlet(member.deviceId, member.index).state, "off", "the last command wins");
      assert.equal(h.storeState("cluster", member.deviceId, member.index), "off", "and its latch");
    } finally {
      await h.sim.setFault(null);
    }
  });

  it("unknown and empty groups are 404 without a write", async () => {
    const before = realStates(h, OUTLETS);
    const unknown = refused(await h.run("cluster", group("42"), "on"), 404);
    assert.ok(unknown.detail.includes('group "42"'), unknown.detail);
    assert.ok(unknown.detail.includes("total, unassigned, 2, 3, 9"), unknown.detail);
    const empty = refused(await h.run("cluster", group("9"), "off"), 404);
    assert.ok(empty.detail.includes("group 9 of instance cluster has no member outlets"), empty.detail);
    const total = refused(await h.run("cluster", group("TOTAL"), "off"), 404);
    assert.ok(total.detail.includes("group total of instance cluster has no member outlets"), total.detail);
    assert.deepEqual(h.sim.writes(), []);
    assert.deepEqual(realStates(h, OUTLETS), before);
  });

  it("409 for a group whose members include a device with outletControlEnabled: false", async () => {
    const members = h.sim.groupMembers("2");
    const memberDevice = members.find((m) => portOf.get(m.deviceId) !== h.sim.port)?.deviceId;
    assert.ok(memberDevice, "group 2 has outlets on a member unit");
    h.sim.setOutletControlEnabled(memberDevice, false);
    try {
      await h.poll("cluster");
      h.sim.clearRequests();
      const outcome = refused(await h.run("cluster", group("2"), "off"), 409);
      assert.ok(
        outcome.detail.includes(`group 2 includes outlets of device ${memberDevice}`),
        outcome.detail,
      );
      assert.ok(outcome.detail.includes("disabled on the PDU itself"), outcome.detail);
      assert.deepEqual(h.sim.requests, [], "no outlet of the group was written");
    } finally {
      h.sim.setOutletControlEnabled(memberDevice, true);
      await h.poll("cluster");
    }
  });
});
