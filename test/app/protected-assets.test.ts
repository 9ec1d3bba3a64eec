/**
 * The protected-asset rule through the composed App, on every path that can switch an outlet off
 * (an asset's off, an outlet's off or reboot, a OneView group's off, a setting that holds an outlet
 * off; over REST and MQTT): an off that would leave a protected asset with no live cord is refused
 * with 409 naming the asset and its other cords' states, and the simulators' write journals show
 * that nothing was sent; also when the other cord's PDU is offline or was never polled (its state
 * unknown). What leaves a live cord is let through.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import type { ControlEvent } from "../../src/bus.js";
import type { Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { feedAssetBook, type FedBook } from "../../testkit/asset-book.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "protected-assets-key-3a9c1f";
const withKey = { "x-api-key": KEY };

type Sims = "a" | "cl" | "dead";

describe("protected assets on every path", () => {
  let h: AppHarness<Sims>;
  let fed: FedBook;
  const events: ControlEvent[] = [];
  let devA = "";
  /** The OneView group member that is db-01's second cord. */
  let member = { deviceId: "", index: 0 };
  const writes = (sim: Simulator): number => sim.journal().length;

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: {
        a: { outlets: 4 },
        cl: { oneview: { members: 2 }, outlets: 4, seed: 7 },
        dead: { outlets: 2, seed: 9 },
      },
      // The third PDU never answers: its cords are never polled, their state unknown.
      beforeStart: (s) => s.dead.setFault("refuse"),
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("a", s.a, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
            pduYaml("cl", s.cl, { actionsEnabled: true, pollInterval: 1, relayProtection: 0 }),
            pduYaml("dead", s.dead, {
              actionsEnabled: true,
              pollInterval: 1,
              relayProtection: 0,
              timeout: 1,
            }),
          ],
        }),
    });
    await h.waitForPoll("a");
    await h.waitForPoll("cl");
    devA = h.sims.a.deviceIds()[0]!;
    member = h.sims.cl.groupMembers("2")[0]!;
    fed = feedAssetBook(h.app, {
      Pdus: { a: {}, cl: {}, dead: {} },
      Assets: {
        "db-01": {
          Protected: true,
          Cords: [
            { Instance: "a", Outlet: 0 },
            { Instance: "cl", Device: member.deviceId, Outlet: member.index },
          ],
        },
        "db-02": {
          Protected: true,
          Cords: [
            { Instance: "a", Outlet: 2 },
            { Instance: "dead", Outlet: 0 },
          ],
        },
      },
    });
    h.app.bus.on("control", (e) => events.push(e));
    await h.commandsReady("a");
  });
  after(async () => {
    fed?.close();
    await h?.close();
  });

  /** Every cord of db-01 and db-02's first on (through the bridge, so no latch says otherwise). */
  beforeEach(async () => {
    for (const path of [
      `/api/v1/instances/a/outlets/${devA}/0/control`,
      `/api/v1/instances/a/outlets/${devA}/2/control`,
      `/api/v1/instances/cl/outlets/${member.deviceId}/${member.index}/control`,
    ]) {
      const on = await h.api.post(path, { action: "on" }, withKey);
      assert.equal(on.status, 200, on.text);
    }
    await waitFor(
      () => fed.book.get("db-01")?.readings.every((r) => r.status === "live"),
      "both cords of db-01 live",
      15_000,
    );
  });

  /** db-01's first cord switched off (allowed: the second is live), and the book seeing it. */
  async function firstCordOff(): Promise<void> {
    const off = await h.api.post(`/api/v1/instances/a/outlets/${devA}/0/control`, { action: "off" }, withKey);
    assert.equal(off.status, 200, off.text);
    await waitFor(() => fed.book.get("db-01")?.readings[0]?.status === "off", "cord 1 of db-01 off");
  }

  function assertRefused(res: { status: number; text: string }, asset: string): void {
    assert.equal(res.status, 409, res.text);
    const body = JSON.parse(res.text) as { type: string; detail: string };
    assert.match(body.type, /protected$/);
    assert.match(body.detail, new RegExp(`protected asset ${asset} would be left with no live cord`));
    assert.match(body.detail, /nothing was sent/);
  }

  it("REST: an outlet off leaving a live cord runs; the last live cord's off is refused, nothing sent", async () => {
    await firstCordOff();
    const before = writes(h.sims.cl);
    const res = await h.api.post(
      `/api/v1/instances/cl/outlets/${member.deviceId}/${member.index}/control`,
      { action: "off" },
      withKey,
    );
    assertRefused(res, "db-01");
    assert.match(res.text, new RegExp(`a/${devA} outlet 0 \\(this request\\)|a/${devA} outlet 0 off`));
    const reboot = await h.api.post(
      `/api/v1/instances/cl/outlets/${member.deviceId}/${member.index}/control`,
      { action: "reboot" },
      withKey,
    );
    assertRefused(reboot, "db-01");
    assert.equal(writes(h.sims.cl), before, "nothing was written to the PDU");
    assert.equal(h.sims.cl.outlet(member.deviceId, member.index).state, "on");
  });

  it("REST: a group off that includes the last live cord is refused whole", async () => {
    await firstCordOff();
    const before = writes(h.sims.cl);
    const res = await h.api.post(`/api/v1/instances/cl/groups/2/control`, { action: "off" }, withKey);
    assertRefused(res, "db-01");
    assert.equal(writes(h.sims.cl), before);
  });

  it("REST: a setting that holds the last live cord off (poaAction off) is refused", async () => {
    await firstCordOff();
    const before = writes(h.sims.cl);
    const res = await h.api.send(`/api/v1/instances/cl/outlets/${member.deviceId}/${member.index}`, {
      method: "PATCH",
      body: { poaAction: "off" },
      headers: withKey,
    });
    assertRefused(res, "db-01");
    assert.equal(writes(h.sims.cl), before);
  });

  it("REST: the asset's off is refused while it is protected, nothing sent to either PDU", async () => {
    const before = [writes(h.sims.a), writes(h.sims.cl)];
    const res = await h.api.post(`/api/v1/assets/db-01/control`, { action: "off" }, withKey);
    assert.equal(res.status, 409, res.text);
    const body = res.json<{ outcome: string; asset: string; type: string; cords: unknown[] }>();
    assert.equal(body.outcome, "refused");
    assert.equal(body.asset, "db-01");
    assert.match(body.type, /protected$/);
    assert.deepEqual(body.cords, []);
    assert.deepEqual([writes(h.sims.a), writes(h.sims.cl)], before);
  });

  it("MQTT: the last live cord's off and the asset's off are refused, nothing sent", async () => {
    await firstCordOff();
    const before = writes(h.sims.cl);
    const outlet = await h.publishCommand(
      `${h.parent}/cl/${member.deviceId}/outlets/${member.index}/set`,
      "off",
    );
    assert.equal(outlet.status, 409);
    assert.equal(outlet.problem, "protected");
    const seen = events.length;
    await h.mqtt.publish(`${h.parent}/$assets/db-01/set`, "off");
    const refused = await waitFor(
      () => events.slice(seen).find((e) => e.asset === "db-01"),
      "the asset command's audit",
    );
    assert.equal(refused.status, 409);
    assert.equal(refused.problem, "protected");
    assert.equal(writes(h.sims.cl), before);
  });

  it("two offs of a protected asset's two cords: the second is refused while the first is in flight", async () => {
    // The first off reaches its PDU and hangs there for 2 s: the book still reads that cord on.
    await h.sims.a.setFault("slow:2000");
    try {
      const path = `/api/dev/${devA}/outlet/0`;
      const received = h.sims.a.requests.filter((r) => r.method === "POST" && r.path === path).length;
      const first = h.api.post(`/api/v1/instances/a/outlets/${devA}/0/control`, { action: "off" }, withKey);
      await waitFor(
        () => h.sims.a.requests.filter((r) => r.method === "POST" && r.path === path).length > received,
        "the first off at its PDU",
      );
      assert.equal(fed.book.get("db-01")?.readings[0]?.status, "live", "the book has not seen the first off");
      const before = writes(h.sims.cl);
      const second = await h.api.post(
        `/api/v1/instances/cl/outlets/${member.deviceId}/${member.index}/control`,
        { action: "off" },
        withKey,
      );
      assertRefused(second, "db-01");
      assert.match(second.text, /an off of it in flight/);
      assert.equal((await first).status, 200);
      assert.equal(writes(h.sims.cl), before, "nothing was written to the second cord's PDU");
      assert.equal(h.sims.cl.outlet(member.deviceId, member.index).state, "on");
    } finally {
      await h.sims.a.setFault(null);
    }
  });

  it("MQTT: the group's off and a setting holding the last live cord off are refused, nothing sent", async () => {
    await firstCordOff();
    const before = writes(h.sims.cl);
    const group = await h.publishCommand(`${h.parent}/cl/groups/2/set`, "off");
    assert.equal(group.status, 409);
    assert.equal(group.problem, "protected");
    const setting = await h.publishCommand(
      `${h.parent}/cl/${member.deviceId}/outlets/${member.index}/poaAction/set`,
      "off",
    );
    assert.equal(setting.status, 409);
    assert.equal(setting.problem, "protected");
    assert.equal(writes(h.sims.cl), before);
  });

  it("the other cord's PDU offline: its cord is not live, so the off is refused", async () => {
    await h.sims.cl.setFault("refuse");
    try {
      await waitFor(
        () => fed.book.get("db-01")?.readings[1]?.problem === "offline",
        "cord 2 offline",
        15_000,
      );
      const before = writes(h.sims.a);
      const res = await h.api.post(
        `/api/v1/instances/a/outlets/${devA}/0/control`,
        { action: "off" },
        withKey,
      );
      assertRefused(res, "db-01");
      assert.match(res.text, /unknown \(/);
      assert.equal(writes(h.sims.a), before);
      assert.equal(h.sims.a.outlet(devA, 0).state, "on");
    } finally {
      await h.sims.cl.setFault(null);
    }
  });

  it("the other cord's PDU never polled (state unknown): the off is refused", async () => {
    const before = writes(h.sims.a);
    const res = await h.api.post(`/api/v1/instances/a/outlets/${devA}/2/control`, { action: "off" }, withKey);
    assertRefused(res, "db-02");
    assert.match(res.text, /dead outlet 0 unknown/);
    const mqtt = await h.publishCommand(`${h.parent}/a/${devA}/outlets/2/set`, "off");
    assert.equal(mqtt.status, 409);
    assert.equal(writes(h.sims.a), before);
  });

  it("reboot of a protected asset needs confirm; confirmed, every cord goes off and on once", async () => {
    const before = [writes(h.sims.a), writes(h.sims.cl)];
    const unconfirmed = await h.api.post(`/api/v1/assets/db-01/control`, { action: "reboot" }, withKey);
    assert.equal(unconfirmed.status, 409, unconfirmed.text);
    assert.match(unconfirmed.json<{ type: string }>().type, /confirm-required$/);
    assert.deepEqual([writes(h.sims.a), writes(h.sims.cl)], before);

    const res = await h.api.post(
      `/api/v1/assets/db-01/control`,
      { action: "reboot", confirm: true },
      withKey,
    );
    assert.equal(res.status, 200, res.text);
    const body = res.json<{ outcome: string; cords: { result: string; writes: { action: string }[] }[] }>();
    assert.equal(body.outcome, "executed");
    assert.deepEqual(
      body.cords.map((c) => [c.result, c.writes.map((w) => w.action).join(",")]),
      [
        ["done", "off,on"],
        ["done", "off,on"],
      ],
    );
    const actions = (sim: Simulator, dev: string, index: number, since: number) =>
      sim
        .journal()
        .slice(since)
        .filter((e) => e.path === `/api/dev/${dev}/outlet/${index}`)
        .map((e) => String(e.data.action));
    assert.deepEqual(actions(h.sims.a, devA, 0, before[0]!), ["off", "on"]);
    assert.deepEqual(actions(h.sims.cl, member.deviceId, member.index, before[1]!), ["off", "on"]);
    // Each cord's write is audited with the asset named.
    const audited = h.audits().filter((l) => l.asset === "db-01" && l.status === 200);
    assert.ok(audited.length >= 4, `${audited.length} audit lines naming db-01`);
  });
});
