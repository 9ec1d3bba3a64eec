/**
 * Asset control through the composed App against simulators over real sockets: an asset's on, off
 * and reboot write every cord exactly once (the simulators' write journals), the answer lists each
 * cord's outcome, a cord whose PDU stops answering mid-command is named `unknown` while the others
 * are done, and a cord on an instance without ActionsEnabled refuses the whole command before
 * anything is sent. Each cord's write is audited with the asset named. The assets are the
 * configuration's, whose book control keeps itself.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import type { Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "asset-control-key-51b2e0";
const ASSETS = {
  "web-01": {
    Cords: [
      { Instance: "a", Outlet: 1 },
      { Instance: "b", Outlet: 1 },
    ],
  },
  "web-02": {
    Cords: [
      { Instance: "a", Outlet: 2 },
      { Instance: "b", Outlet: 2 },
    ],
  },
  "lab-01": {
    Cords: [
      { Instance: "a", Outlet: 3 },
      { Instance: "ro", Outlet: 0 },
    ],
  },
};
const withKey = { "x-api-key": KEY };

type Sims = "a" | "b" | "ro";

interface CordBody {
  cord: number;
  instanceId: string;
  result: string;
  writes: { action: string; result: string; status: number; detail?: string }[];
}
interface AssetBody {
  outcome: string;
  asset: string;
  detail?: string;
  type?: string;
  cords: CordBody[];
}

describe("asset control, cord by cord", () => {
  let h: AppHarness<Sims>;
  const book = () => h.app.assetBook;
  let devA = "";
  let devB = "";

  /** The actions written to one outlet of a simulator since `since` (its write journal). */
  const actions = (sim: Simulator, dev: string, index: number, since: number): string[] =>
    sim
      .journal()
      .slice(since)
      .filter((e) => e.path === `/api/dev/${dev}/outlet/${index}`)
      .map((e) => String(e.data.action));

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: { a: { outlets: 4 }, b: { outlets: 4, seed: 5 }, ro: { outlets: 2, seed: 9 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          // The assets from the configuration: control keeps their book itself.
          extra: stringify({ Assets: ASSETS }),
          pdus: [
            pduYaml("a", s.a, { actionsEnabled: true, pollInterval: 1, relayProtection: 0, timeout: 1 }),
            pduYaml("b", s.b, { actionsEnabled: true, pollInterval: 1, relayProtection: 0, timeout: 1 }),
            pduYaml("ro", s.ro, { actionsEnabled: false, pollInterval: 1 }),
          ],
        }),
      waitForFirstPolls: true,
    });
    devA = h.sims.a.deviceIds()[0]!;
    devB = h.sims.b.deviceIds()[0]!;
    await waitFor(
      () =>
        ["web-01", "web-02", "lab-01"].every((id) =>
          book()
            ?.get(id)
            ?.readings.every((r) => r.resolved),
        ),
      "every cord resolved",
    );
  });
  after(async () => {
    await h?.close();
  });

  it("off then on: each cord written once, each cord's outcome in the answer", async () => {
    const since = [h.sims.a.journal().length, h.sims.b.journal().length];
    const off = await h.api.post(`/api/v1/assets/web-01/control`, { action: "off" }, withKey);
    assert.equal(off.status, 200, off.text);
    const body = off.json<AssetBody>();
    assert.equal(body.outcome, "executed");
    assert.deepEqual(
      body.cords.map((c) => [c.cord, c.instanceId, c.result, c.writes.map((w) => w.action).join(",")]),
      [
        [0, "a", "done", "off"],
        [1, "b", "done", "off"],
      ],
    );
    assert.equal(h.sims.a.outlet(devA, 1).state, "off");
    assert.equal(h.sims.b.outlet(devB, 1).state, "off");
    const on = await h.api.post(`/api/v1/assets/web-01/control`, { action: "on" }, withKey);
    assert.equal(on.status, 200, on.text);
    assert.deepEqual(actions(h.sims.a, devA, 1, since[0]!), ["off", "on"]);
    assert.deepEqual(actions(h.sims.b, devB, 1, since[1]!), ["off", "on"]);
    await waitFor(() => book()?.get("web-01")?.state === "on", "web-01 on in the book");
    const audited = h.audits().filter((l) => l.asset === "web-01" && l.instance !== null);
    assert.equal(audited.length, 4, "one audit line per cord's write, naming the asset");
  });

  it("reboot: every cord off together, then on together, each exactly once", async () => {
    const since = [h.sims.a.journal().length, h.sims.b.journal().length];
    const res = await h.api.post(`/api/v1/assets/web-01/control`, { action: "reboot" }, withKey);
    assert.equal(res.status, 200, res.text);
    const body = res.json<AssetBody>();
    assert.deepEqual(
      body.cords.map((c) => c.writes.map((w) => `${w.action}:${w.result}`).join(",")),
      ["off:done,on:done", "off:done,on:done"],
    );
    assert.deepEqual(actions(h.sims.a, devA, 1, since[0]!), ["off", "on"]);
    assert.deepEqual(actions(h.sims.b, devB, 1, since[1]!), ["off", "on"]);
    // Both offs reached the PDUs before either on.
    const writes = [...h.sims.a.journal().slice(since[0]), ...h.sims.b.journal().slice(since[1])].sort(
      (x, y) => x.time - y.time,
    );
    assert.deepEqual(
      writes.map((w) => String(w.data.action)),
      ["off", "off", "on", "on"],
    );
  });

  it("a cord on an instance without ActionsEnabled refuses the whole command, nothing sent", async () => {
    const since = [h.sims.a.journal().length, h.sims.ro.journal().length];
    const res = await h.api.post(`/api/v1/assets/lab-01/control`, { action: "off" }, withKey);
    assert.equal(res.status, 409, res.text);
    const body = res.json<AssetBody>();
    assert.equal(body.outcome, "refused");
    assert.deepEqual(body.cords, []);
    assert.match(body.detail ?? "", /cord 2 \(ro.* outlet 0\) is on instance ro/);
    assert.match(body.detail ?? "", /nothing was sent/);
    assert.deepEqual([h.sims.a.journal().length, h.sims.ro.journal().length], since);
  });

  it("an unknown asset or action is refused with what is known", async () => {
    const unknown = await h.api.post(`/api/v1/assets/nope/control`, { action: "off" }, withKey);
    assert.equal(unknown.status, 404, unknown.text);
    assert.match(unknown.text, /web-01/);
    const bad = await h.api.post(`/api/v1/assets/web-01/control`, { action: "cycle" }, withKey);
    assert.equal(bad.status, 400, bad.text);
    const noKey = await h.api.post(`/api/v1/assets/web-01/control`, { action: "off" });
    assert.equal(noKey.status, 401, noKey.text);
  });

  it("a cord's PDU hanging: that cord's outcome is unknown and named, the other is done", async () => {
    const since = [h.sims.a.journal().length, h.sims.b.journal().length];
    await h.sims.b.setFault("hang");
    try {
      const res = await h.api.post(`/api/v1/assets/web-02/control`, { action: "off" }, withKey);
      assert.equal(res.status, 502, res.text);
      const body = res.json<AssetBody>();
      assert.equal(body.outcome, "partial");
      assert.match(body.type ?? "", /outcome-unknown$/);
      assert.deepEqual(
        body.cords.map((c) => [c.instanceId, c.result]),
        [
          ["a", "done"],
          ["b", "unknown"],
        ],
      );
      assert.match(body.detail ?? "", /the outcome of cord 2 \(b\/[^ ]+ outlet 2\) is not known/);
      assert.deepEqual(actions(h.sims.a, devA, 2, since[0]!), ["off"]);
    } finally {
      await h.sims.b.setFault(null);
    }
  });

  it("MQTT: an asset's set topic switches every cord", async () => {
    const since = [h.sims.a.journal().length, h.sims.b.journal().length];
    await h.mqtt.publish(`${h.parent}/$assets/web-02/set`, "on");
    await waitFor(
      () =>
        actions(h.sims.a, devA, 2, since[0]!).length === 1 &&
        actions(h.sims.b, devB, 2, since[1]!).length === 1,
      "both cords of web-02 written",
    );
    await waitFor(
      () => h.audits().filter((l) => l.asset === "web-02" && l.source === "mqtt").length === 2,
      "each cord's audit line, naming the asset and the topic",
    );
    assert.deepEqual(actions(h.sims.a, devA, 2, since[0]!), ["on"]);
    assert.deepEqual(actions(h.sims.b, devB, 2, since[1]!), ["on"]);
  });
});
