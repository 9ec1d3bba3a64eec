/**
 * Per-outlet command discipline (docs/control.md) through the real control core, real GeistClients
 * and the real simulator over HTTP: at most one command executing and one waiting per outlet, a newer
 * on/off supersedes the waiting one, a second reboot is refused while one runs or within its reboot
 * delay, a command waiting too long expires, and group actions take part per outlet.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { createControlService, type ControlCore } from "../../src/control/service.js";
import type { ControlOutcome, ControlTarget } from "../../src/control/types.js";
import { silentLogger } from "../../src/log.js";
import { startControlHarness, waitFor, type ControlHarness } from "../../testkit/control-harness.js";

const outlet = (deviceId: string, index: number): ControlTarget => ({ kind: "outlet", deviceId, index });
const group = (groupKey: string): ControlTarget => ({ kind: "group", groupKey });

function failure(
  outcome: ControlOutcome,
  status: number,
  problem?: string,
): Extract<ControlOutcome, { ok: false }> {
  assert.equal(outcome.ok, false, `expected ${status}, got ${JSON.stringify(outcome)}`);
  if (outcome.ok) throw new Error("unreachable");
  assert.equal(outcome.status, status, outcome.detail);
  if (problem !== undefined) assert.equal(outcome.problem, problem, outcome.detail);
  return outcome;
}

describe("per-outlet command discipline", () => {
  let h: ControlHarness;
  let core: ControlCore;
  let dev: string;
  const cores: ControlCore[] = [];

  const newCore = (waitLimitMs?: number): ControlCore => {
    const c = createControlService({
      config: h.config,
      store: h.store,
      clients: h.clients,
      pollSoon: () => undefined,
      logger: silentLogger(),
      ...(waitLimitMs === undefined ? {} : { discipline: { waitLimitMs } }),
    });
    cores.push(c);
    return c;
  };
  const run = (c: ControlCore, target: ControlTarget, action: string, instanceId = "pdu") =>
    c.execute({ instanceId, target, action, source: { surface: "mqtt", topic: "t" } });
  const writesTo = (index: number) =>
    h.sim.writes().filter((w) => w.path === `/api/dev/${dev}/outlet/${index}`);

  before(async () => {
    h = await startControlHarness({
      sim: { oneview: { members: 1 }, outlets: 4, stateLagMs: 60_000 },
      // Relay protection off: these cases are about the turns' other rules (test/app/relay-protection.test.ts).
      instances: [{ id: "pdu", timeout: 30, relayProtection: 0 }],
      poll: ["pdu"],
    });
    const first = h.sim.deviceIds()[0];
    assert.ok(first !== undefined);
    dev = first;
    core = newCore();
    // Logs in once, so that the writes below are the only requests.
    assert.equal((await run(core, outlet(dev, 3), "on")).status, 200);
  });
  after(async () => {
    await h.sim.setFault(null);
    await Promise.all(cores.map((c) => c.stop(0)));
    await h?.close();
  });
  beforeEach(async () => {
    await h.sim.setFault(null);
    h.sim.clearRequests();
  });

  it("a newer on/off supersedes the waiting one (409), and the last state asked for is written", async () => {
    await h.sim.setFault("slow:400");
    const first = run(core, outlet(dev, 0), "off");
    await waitFor(() => writesTo(0).length === 1, "the first write to reach the PDU");
    const second = run(core, outlet(dev, 0), "on");
    const third = run(core, outlet(dev, 0), "off");
    const superseded = failure(await second, 409, "superseded");
    assert.match(superseded.detail, /superseded by a later on\/off for the same outlet; not sent/);
    assert.equal((await first).status, 200);
    assert.equal((await third).status, 200);
    assert.deepEqual(
      writesTo(0).map((w) => (w.body as { data: unknown }).data),
      [
        { action: "off", delay: false },
        { action: "off", delay: false },
      ],
      "the superseded `on` never reached the PDU",
    );
  });

  it("a reboot while a reboot of the outlet runs, or within its reboot delay, is refused (409)", async () => {
    await h.sim.setFault("slow:300");
    const first = run(core, outlet(dev, 1), "reboot");
    await waitFor(() => writesTo(1).length === 1, "the reboot to reach the PDU");
    const during = failure(await run(core, outlet(dev, 1), "reboot"), 409, "outlet-busy");
    assert.match(during.detail, /a reboot of this outlet is running/);
    assert.equal((await first).status, 200);
    const afterwards = failure(await run(core, outlet(dev, 1), "reboot"), 409, "outlet-busy");
    assert.match(afterwards.detail, /within|reboot delay/);
    assert.equal(writesTo(1).length, 1, "one reboot reached the PDU");
    // Other commands for the outlet are not held up by the reboot's delay.
    await h.sim.setFault(null);
    assert.equal((await run(core, outlet(dev, 1), "on")).status, 200);
  });

  it("only one command waits: a reboot or reset behind a waiting one is refused", async () => {
    await h.sim.setFault("slow:300");
    const first = run(core, outlet(dev, 2), "on");
    await waitFor(() => writesTo(2).length === 1, "the first write to reach the PDU");
    const waiting = run(core, outlet(dev, 2), "resetStats");
    failure(await run(core, outlet(dev, 2), "resetStats"), 409, "outlet-busy");
    assert.equal((await first).status, 200);
    assert.equal((await waiting).status, 200);
    assert.equal(writesTo(2).length, 2);
  });

  it("a command that waits longer than the limit is dropped (503 expired) and never sent", async () => {
    const quick = newCore(150);
    await h.sim.setFault("slow:1000");
    const first = run(quick, outlet(dev, 3), "off");
    await waitFor(() => writesTo(3).length === 1, "the first write to reach the PDU");
    const expired = failure(await run(quick, outlet(dev, 3), "on"), 503, "expired");
    assert.match(expired.detail, /behind other commands for the same outlet; dropped, not sent/);
    assert.ok((expired.retryAfter ?? 0) >= 1);
    assert.equal((await first).status, 200);
    assert.equal(writesTo(3).length, 1, "the expired command was never sent");
  });

  it("group actions take part per outlet: a group reboot is refused on an outlet that is rebooting", async () => {
    const members = h.sim.groupMembers("2");
    const member = members[0];
    assert.ok(member !== undefined && members.length > 1, "group 2 has outlets");
    await h.sim.setFault("slow:300");
    const single = run(core, outlet(member.deviceId, member.index), "reboot");
    await waitFor(() => h.sim.writes().length === 1, "the outlet's reboot to reach the PDU");
    const grouped = failure(await run(core, group("2"), "reboot"), 502);
    assert.equal((await single).status, 200);
    const mine = grouped.outlets?.find((o) => o.deviceId === member.deviceId && o.index === member.index);
    assert.equal(mine?.ok, false);
    assert.match(mine?.error ?? "", /a reboot of this outlet is running/);
    const ok = grouped.outlets?.filter((o) => o.ok) ?? [];
    assert.ok(ok.length > 0, "the other members were rebooted");
    for (const o of grouped.outlets ?? []) {
      if (!o.ok) assert.match(o.error ?? "", /reboot/, "members are refused only for a reboot of their own");
    }
    assert.equal(h.sim.writes().length, 1 + ok.length, "one write per member done, none for refused ones");
    const reboots = h.sim
      .writes()
      .filter((w) => w.path === `/api/dev/${member.deviceId}/outlet/${member.index}`);
    assert.equal(reboots.length, 1, "that outlet was rebooted once");
  });

  it("stop: waiting commands end unsent (503), in-flight ones finish within the budget", async () => {
    const stopping = newCore();
    await h.sim.setFault("slow:300");
    const first = run(stopping, outlet(dev, 0), "on");
    await waitFor(() => writesTo(0).length === 1, "the first write to reach the PDU");
    const waiting = run(stopping, outlet(dev, 0), "off");
    const stopped = stopping.stop(5000);
    const notSent = failure(await waiting, 503);
    assert.match(notSent.detail, /not sent/);
    assert.equal((await first).status, 200, "finished within the stop budget");
    await stopped;
    failure(await run(stopping, outlet(dev, 0), "off"), 503);
    assert.equal(writesTo(0).length, 1);
  });
});
