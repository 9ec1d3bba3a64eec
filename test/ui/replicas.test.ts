/**
 * The console among several replicas without the network (src/ui/replicas.ts): two replicas'
 * consoles, one asking the other's real answer (the text it would send signed; the protocol between
 * replicas has its own tests, test/cluster/console-replicas.test.ts runs it all as processes). An
 * event another replica made is taken exactly once, a restarted replica's from its first; more events
 * between two asks than it keeps are logged, not dropped unsaid; the holder's state is shown only
 * from the replica seen holding the instance and while it answers; an answer with one wrong field is
 * refused whole; nothing of an instance that is not configured is kept.
 */
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import {
  ReplicaConsole,
  type ReplicaAsk,
  type ReplicaPeers,
  type ReplicaUpdate,
} from "../../src/ui/replicas.js";
import { OWN_EVENTS_KEPT } from "../../src/ui/replica-wire.js";
import type { ControlEventData, WireInstanceStatus } from "../../src/ui/wire.js";
import { LogCapture } from "../../testkit/log-capture.js";

const CONFIGURED = new Set(["x", "y"]);

function status(id: string, powerW: number): WireInstanceStatus {
  return {
    id,
    status: "online",
    host: "192.0.2.1",
    pollInterval: 5,
    actionsEnabled: true,
    mode: "single",
    lastPollUtc: "2026-11-28T10:00:00.000Z",
    lastSuccessUtc: "2026-11-28T10:00:00.000Z",
    lastError: null,
    consecutiveFailures: 0,
    devices: 1,
    outlets: 8,
    powerW,
    loginError: null,
    label: "PDU",
    model: "GU2",
    alarms: { critical: 0, warning: 0 },
    peak: null,
  };
}

const BLANK: WireInstanceStatus = {
  ...status("x", 0),
  status: "pending",
  powerW: null,
  lastSuccessUtc: null,
};

function control(instanceId: string, n: number): { kind: "control" } & ControlEventData {
  return {
    kind: "control",
    instanceId,
    target: { kind: "outlet", deviceId: "d", index: n },
    action: "off",
    ok: true,
    status: 200,
    detail: null,
    source: "rest",
    user: null,
    atUtc: new Date(Date.UTC(2026, 10, 28, 10, 0, n)).toISOString(),
  };
}

/** The world both consoles see: who holds what, whether b answers, b's incarnation. */
const world = {
  holders: new Map<string, string>(),
  down: false,
  incarnation: "aaaaaaaaaaaa",
  /** Replaces b's answer text (a replica answering something else). */
  tamper: null as ((text: string) => string) | null,
};
let now = 0;
let logs: LogCapture;
let b: ReplicaConsole;
let a: ReplicaConsole;
let updates: ReplicaUpdate[];
let bStatuses: WireInstanceStatus[];

function peersOf(member: string, other: () => ReplicaConsole | null): ReplicaPeers {
  return {
    member,
    holds: (id) => world.holders.get(id) === member,
    holderOf: (id) => world.holders.get(id) ?? null,
    peers: () => ["a", "b"].filter((m) => m !== member),
    identityOf: (m) => `${m}/${world.incarnation}`,
    ask: (m: string, ask: ReplicaAsk) => {
      const target = other();
      if (world.down || target === null)
        return Promise.resolve({ ok: false, why: `replica ${m} did not answer` });
      const text = target.answer(ask, {
        statuses: () => bStatuses.map((s) => ({ status: s, alarms: [] })),
        snapshot: () => null,
      });
      return Promise.resolve({
        ok: true,
        identity: `${m}/${world.incarnation}`,
        text: world.tamper?.(text) ?? text,
      });
    },
  };
}

function consoleB(): ReplicaConsole {
  return new ReplicaConsole(
    peersOf("b", () => null),
    {
      logger: logs.logger,
      now: () => now,
      configured: (id) => CONFIGURED.has(id),
      wants: () => ({ statuses: false, snapshots: [] }),
      changed: () => undefined,
    },
  );
}

async function round(): Promise<ReplicaUpdate> {
  const before = updates.length;
  a.soon();
  await a.settled();
  assert.equal(updates.length, before + 1, "one update per round");
  return updates.at(-1)!;
}

beforeEach(() => {
  world.holders = new Map([
    ["x", "b"],
    ["y", "a"],
  ]);
  world.down = false;
  world.incarnation = "aaaaaaaaaaaa";
  world.tamper = null;
  now = 1_000_000;
  logs = new LogCapture();
  updates = [];
  bStatuses = [status("x", 120)];
  b = consoleB();
  a = new ReplicaConsole(
    peersOf("a", () => b),
    {
      logger: logs.logger,
      now: () => now,
      configured: (id) => CONFIGURED.has(id),
      wants: () => ({ statuses: true, snapshots: [] }),
      changed: (update) => updates.push(update),
    },
  );
});

test("another replica's events are taken once each, stamped with it; a restarted one's from its first", async () => {
  for (let n = 0; n < 3; n++) b.record(control("x", n));
  let update = await round();
  assert.deepEqual(
    update.events.map((e) => [e.kind, e.by, e.kind === "control" ? e.target : null]),
    [0, 1, 2].map((n) => ["control", "b", { kind: "outlet", deviceId: "d", index: n }]),
  );
  assert.deepEqual((await round()).events, [], "nothing twice");
  b.record(control("x", 3));
  update = await round();
  assert.equal(update.events.length, 1);
  // b restarted: another incarnation, its numbers start again; its first event is taken.
  world.incarnation = "bbbbbbbbbbbb";
  b = consoleB();
  b.record(control("x", 9));
  update = await round();
  assert.deepEqual(
    update.events.map((e) => (e.kind === "control" ? e.target : null)),
    [{ kind: "outlet", deviceId: "d", index: 9 }],
  );
  // An event of an instance that is not configured is not taken; one claiming another maker is b's.
  b.record({ ...control("nowhere", 1) });
  b.record({ ...control("x", 10), by: "c" });
  update = await round();
  assert.deepEqual(
    update.events.map((e) => [e.kind === "control" ? e.instanceId : "", e.by]),
    [["x", "b"]],
  );
});

test("more events between two asks than a replica keeps: counted and logged, the kept ones taken", async () => {
  b.record(control("x", 0));
  await round();
  for (let n = 0; n < OWN_EVENTS_KEPT + 5; n++) b.record(control("x", n % 60));
  const update = await round();
  assert.equal(update.events.length, OWN_EVENTS_KEPT);
  const line = logs.lines.find((l) => /events of another replica were not received/.test(String(l.msg)));
  assert.ok(line, "logged");
  assert.equal(line.missed, 5);
  assert.equal(line.member, "b");
});

test("the holder's state is shown from the replica seen holding it, while it answers; else nothing of it, and why", async () => {
  await round();
  let shown = a.statusOf("x", BLANK);
  assert.equal(shown.powerW, 120);
  assert.deepEqual(shown.replica, { holder: "b", here: false, state: "holder", note: null });
  // b stops answering: its last state is not shown any more.
  world.down = true;
  await round();
  shown = a.statusOf("x", BLANK);
  assert.equal(shown.powerW, null);
  assert.deepEqual(shown.replica, {
    holder: "b",
    here: false,
    state: "none",
    note: "replica b did not answer",
  });
  world.down = false;
  await round();
  assert.equal(a.statusOf("x", BLANK).powerW, 120, "shown again once it answers");
  // Another replica holds it now (a handover): b's state of it is not shown.
  world.holders.set("x", "c");
  shown = a.statusOf("x", BLANK);
  assert.equal(shown.powerW, null);
  assert.equal(shown.replica?.holder, "c");
  // Nobody holds it.
  world.holders.delete("x");
  shown = a.statusOf("x", BLANK);
  assert.equal(shown.replica?.holder, null);
  assert.equal(shown.replica?.state, "none");
  assert.match(shown.replica?.note ?? "", /no replica holds it now/);
  // An old answer is not shown either.
  world.holders.set("x", "b");
  now += 60_000;
  assert.equal(a.statusOf("x", BLANK).replica?.state, "none");
});

test("an answer with one wrong field is refused whole; instances not configured are not kept; an instance b no longer names is dropped", async () => {
  await round();
  world.tamper = (text) => text.replace('"status":"online"', '"status":"weird"');
  await round();
  const shown = a.statusOf("x", BLANK);
  assert.equal(shown.replica?.state, "none");
  assert.match(shown.replica?.note ?? "", /not a console answer of this version/);
  world.tamper = null;
  bStatuses = [status("x", 130), status("elsewhere", 5)];
  await round();
  assert.equal(a.statusOf("x", BLANK).powerW, 130);
  world.holders.set("elsewhere", "b");
  assert.equal(a.statusOf("elsewhere", BLANK).replica?.state, "none", "not configured: nothing kept");
  bStatuses = [];
  await round();
  assert.equal(a.statusOf("x", BLANK).replica?.state, "none", "b holds it no more");
  // A string longer than its bound is refused too.
  bStatuses = [{ ...status("x", 1), label: "L".repeat(300) }];
  await round();
  assert.equal(a.statusOf("x", BLANK).replica?.state, "none");
});
