import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import type { WireApi } from "../../src/simulator/tree.js";
import { getJson, login, postJson } from "../../testkit/sim-http.js";

const control = (token: string, action: string, delay = false): unknown => ({
  cmd: "control",
  token,
  data: { action, delay },
});
const set = (token: string, data: Record<string, unknown>): unknown => ({ cmd: "set", token, data });

describe("simulator login and tokens", () => {
  let sim: Simulator;
  let id: string;
  before(async () => {
    sim = await startSimulator({ outlets: 4, users: { admin: "admin", "ops team": "s3cret" } });
    id = sim.deviceIds()[0] ?? "";
  });
  after(() => sim.close());

  it("gives a token for the right password, 1004 for a wrong one, 1001 for an unknown user", async () => {
    const token = await login(sim.url);
    assert.match(token, /^[0-9a-f]{16}$/);
    assert.match(await login(sim.url, "ops team", "s3cret"), /^[0-9a-f]{16}$/);
    const body = (password: string): unknown => ({ token: "", cmd: "login", data: { password } });
    assert.equal((await postJson(`${sim.url}/api/auth/admin`, body("nope"))).retCode, 1004);
    assert.equal((await postJson(`${sim.url}/api/auth/nobody`, body("admin"))).retCode, 1001);
  });

  it("a write needs a valid token: a bad one gets 1001 with HTTP 200", async () => {
    sim.setOutletState(id, 0, "on");
    const bad = await postJson(`${sim.url}/api/dev/${id}/outlet/0`, control("deadbeef", "off"));
    assert.equal(bad.retCode, 1001);
    assert.equal(sim.outlet(id, 0).state, "on");
    const token = await login(sim.url);
    assert.equal((await postJson(`${sim.url}/api/dev/${id}/outlet/0`, control(token, "off"))).retCode, 0);
    assert.equal(sim.outlet(id, 0).state, "off");
  });

  it("expireTokens makes writes fail with 1001 until the next login", async () => {
    const token = await login(sim.url);
    sim.expireTokens();
    assert.equal((await postJson(`${sim.url}/api/dev/${id}/outlet/1`, control(token, "off"))).retCode, 1001);
    const fresh = await login(sim.url);
    assert.equal((await postJson(`${sim.url}/api/dev/${id}/outlet/1`, control(fresh, "off"))).retCode, 0);
  });

  it("setPassword changes the password; tokens already given stay valid", async () => {
    const token = await login(sim.url);
    sim.setPassword("admin", "changed");
    const old = await postJson(`${sim.url}/api/auth/admin`, {
      token: "",
      cmd: "login",
      data: { password: "admin" },
    });
    assert.equal(old.retCode, 1004);
    assert.ok(await login(sim.url, "admin", "changed"));
    assert.equal((await postJson(`${sim.url}/api/dev/${id}/outlet/1`, control(token, "on"))).retCode, 0);
    sim.setPassword("admin", "admin");
  });

  it("records requests with the password redacted; writes() leaves out logins", async () => {
    sim.clearRequests();
    const token = await login(sim.url);
    await postJson(`${sim.url}/api/dev/${id}/outlet/2`, control(token, "on"));
    await getJson(`${sim.url}/api`);
    assert.deepEqual(
      sim.requests.map((r) => [r.method, r.path, r.cmd, r.port, r.unit, r.chunked]),
      [
        ["POST", "/api/auth/admin", "login", sim.port, 0, false],
        ["POST", `/api/dev/${id}/outlet/2`, "control", sim.port, 0, false],
        ["GET", "/api", null, sim.port, 0, false],
      ],
    );
    assert.deepEqual(sim.requests[0]?.body, { token: "", cmd: "login", data: { password: "[redacted]" } });
    assert.deepEqual(
      sim.writes().map((w) => w.body),
      [control(token, "on")],
    );
    sim.clearRequests();
    assert.equal(sim.requests.length, 0);
  });
});

describe("simulator writes", () => {
  let now = 1_700_000_000_000;
  let sim: Simulator;
  let id: string;
  let token: string;
  let outletUrl: (index: number) => string;
  const tree = async (): Promise<WireApi> => (await getJson(`${sim.url}/api`)).data as WireApi;
  const wireOutlet = async (index: number): Promise<Record<string, unknown>> =>
    (await getJson(outletUrl(index))).data as Record<string, unknown>;

  before(async () => {
    sim = await startSimulator({ outlets: 8, rebootMs: 250, clock: () => now });
    id = sim.deviceIds()[0] ?? "";
    token = await login(sim.url);
    outletUrl = (index) => `${sim.url}/api/dev/${id}/outlet/${index}`;
  });
  after(() => sim.close());

  it("control on and off switch the outlet at once with delay:false", async () => {
    sim.setOutletState(id, 0, "on");
    assert.equal((await postJson(outletUrl(0), control(token, "off"))).retCode, 0);
    assert.equal(sim.outlet(id, 0).state, "off");
    assert.equal((await wireOutlet(0)).state, "off");
    assert.equal((await postJson(outletUrl(0), control(token, "on"))).retCode, 0);
    assert.equal((await wireOutlet(0)).state, "on");
  });

  it("reboot turns the outlet off, then on again after rebootMs", async () => {
    sim.setOutletState(id, 1, "on");
    assert.equal((await postJson(outletUrl(1), control(token, "reboot"))).retCode, 0);
    assert.equal(sim.outlet(id, 1).state, "off");
    assert.equal((await wireOutlet(1)).state, "off");
    now += 249;
    assert.equal(sim.outlet(id, 1).state, "off");
    now += 1;
    assert.equal(sim.outlet(id, 1).state, "on");
    assert.equal((await wireOutlet(1)).state, "on");
  });

  it("delay:true honours the outlet's onDelay and offDelay", async () => {
    sim.setOutletState(id, 2, "off");
    assert.equal((await postJson(outletUrl(2), set(token, { onDelay: 10 }))).retCode, 0);
    await postJson(outletUrl(2), control(token, "on", true));
    assert.equal(sim.outlet(id, 2).state, "off");
    assert.equal((await wireOutlet(2)).timeToAction, 10);
    now += 10_000;
    assert.equal(sim.outlet(id, 2).state, "on");
  });

  it("reset energy sets the outlet's energy to 0", async () => {
    sim.setOutletState(id, 3, "on");
    now += 3_600_000;
    assert.ok(sim.outlet(id, 3).energyKwh > 0);
    assert.equal(
      (await postJson(outletUrl(3), { cmd: "reset", token, data: { target: "energy" } })).retCode,
      0,
    );
    const energy = Object.values(
      (await wireOutlet(3)).measurement as Record<string, { type: string; value: string }>,
    )
      .filter((m) => m.type === "energy")
      .map((m) => m.value);
    assert.deepEqual(energy, ["0.000"]);
  });

  it("set changes label, delays and power-on action", async () => {
    const reply = await postJson(
      outletUrl(4),
      set(token, { label: "web-01", onDelay: 3600, offDelay: 0, rebootDelay: 12, poaAction: "off" }),
    );
    assert.equal(reply.retCode, 0);
    const o = await wireOutlet(4);
    assert.deepEqual(
      [o.label, o.onDelay, o.offDelay, o.rebootDelay, o.poaAction],
      ["web-01", 3600, 0, 12, "off"],
    );
  });

  it("set validates every field and changes nothing when one is invalid", async () => {
    for (const data of [
      { onDelay: 3601 },
      { offDelay: -1 },
      { rebootDelay: 1.5 },
      { poaAction: "maybe" },
      { label: 5 },
      { colour: "red" },
      { label: "ok", onDelay: "10" },
      {},
    ]) {
      const reply = await postJson(outletUrl(5), set(token, data));
      assert.equal(reply.retCode, 2001, JSON.stringify(data));
    }
    const o = sim.outlet(id, 5);
    assert.deepEqual([o.label, o.onDelay, o.offDelay, o.rebootDelay], ["", 0, 0, 5]);
    assert.equal((await postJson(outletUrl(5), control(token, "explode"))).retCode, 2001);
    assert.equal(
      (await postJson(outletUrl(5), { cmd: "reset", token, data: { target: "all" } })).retCode,
      2001,
    );
  });

  it("renames the device and an entity", async () => {
    assert.equal((await postJson(`${sim.url}/api/dev/${id}`, set(token, { label: "Rack 7" }))).retCode, 0);
    const entityUrl = `${sim.url}/api/dev/${id}/entity/breaker1`;
    assert.equal((await postJson(entityUrl, set(token, { label: "Left" }))).retCode, 0);
    const dev = (await tree()).dev[id];
    assert.equal(dev?.label, "Rack 7");
    assert.equal(dev?.entity.breaker1?.label, "Left");
    assert.equal(
      (await postJson(`${sim.url}/api/dev/${id}/entity/breaker9`, set(token, { label: "x" }))).retCode,
      3001,
    );
  });

  it("unknown devices, outlets and paths answer 3001", async () => {
    for (const path of [
      `/api/dev/NOPE/outlet/0`,
      `/api/dev/${id}/outlet/8`,
      `/api/dev/${id}/outlet/01`,
      "/api/sys",
    ])
      assert.equal((await postJson(`${sim.url}${path}`, control(token, "on"))).retCode, 3001, path);
    assert.equal((await postJson(`${sim.url}/oneview/group/2`, set(token, { label: "x" }))).retCode, 3001);
  });

  it("refuses control with 2003 when outletControlEnabled is false", async () => {
    sim.setOutletState(id, 6, "on");
    sim.setOutletControlEnabled(id, false);
    assert.equal((await postJson(outletUrl(6), control(token, "off"))).retCode, 2003);
    assert.equal(sim.outlet(id, 6).state, "on");
    assert.deepEqual((await tree()).dev[id]?.conf, { outletControlEnabled: false });
    assert.equal((await postJson(outletUrl(6), set(token, { label: "still settable" }))).retCode, 0);
    sim.setOutletControlEnabled(id, true);
    assert.equal((await postJson(outletUrl(6), control(token, "off"))).retCode, 0);
  });
});

describe("simulator reported state lag", () => {
  let now = 1_700_000_000_000;
  let sim: Simulator;
  let id: string;
  before(async () => {
    sim = await startSimulator({ outlets: 2, stateLagMs: 60_000, clock: () => now });
    id = sim.deviceIds()[0] ?? "";
  });
  after(() => sim.close());
  const reported = async (): Promise<unknown> =>
    (await getJson(`${sim.url}/api/dev/${id}/outlet/0/state`)).data;

  it("keeps reporting the old state for stateLagMs after a switch, while power follows at once", async () => {
    const token = await login(sim.url);
    assert.equal(await reported(), "on");
    await postJson(`${sim.url}/api/dev/${id}/outlet/0`, control(token, "off"));
    assert.equal(sim.outlet(id, 0).state, "off");
    assert.equal(sim.outlet(id, 0).realPowerW, 0);
    assert.equal(await reported(), "on");
    now += 59_999;
    assert.equal(await reported(), "on");
    now += 1;
    assert.equal(await reported(), "off");
  });

  it("setReportedState pins the reported state until the next switch", async () => {
    sim.setReportedState(id, 0, "on");
    assert.equal(await reported(), "on");
    assert.equal(sim.outlet(id, 0).reportedState, "on");
    sim.setReportedState(id, 0, null);
    assert.equal(await reported(), "off");
  });
});

describe("simulator OneView writes", () => {
  let sim: Simulator;
  before(async () => {
    sim = await startSimulator({ oneview: { members: 2 }, outlets: 4 });
  });
  after(() => sim.close());

  it("member devices are written through their own proxy port, with its own token", async () => {
    const [master, m1, m2] = sim.units;
    const memberDevice = m1?.deviceIds[0] ?? "";
    const path = `/api/dev/${memberDevice}/outlet/0`;
    const masterToken = await login(sim.url);
    const m1Token = await login(m1?.url ?? "");
    const m2Token = await login(m2?.url ?? "");
    sim.setOutletState(memberDevice, 0, "on");

    assert.equal(
      (await postJson(`${sim.url}${path}`, control(masterToken, "off"))).retCode,
      3001,
      "master port",
    );
    assert.equal(
      (await postJson(`${m2?.url}${path}`, control(m2Token, "off"))).retCode,
      3001,
      "other member",
    );
    assert.equal(
      (await postJson(`${m1?.url}${path}`, control(masterToken, "off"))).retCode,
      1001,
      "foreign token",
    );
    assert.equal(sim.outlet(memberDevice, 0).state, "on");
    assert.equal((await postJson(`${m1?.url}${path}`, control(m1Token, "off"))).retCode, 0);
    assert.equal(sim.outlet(memberDevice, 0).state, "off");

    const masterDevice = master?.deviceIds[0] ?? "";
    const masterPath = `/api/dev/${masterDevice}/outlet/1`;
    assert.equal((await postJson(`${m1?.url}${masterPath}`, control(m1Token, "off"))).retCode, 3001);
    assert.equal((await postJson(`${sim.url}${masterPath}`, control(masterToken, "off"))).retCode, 0);
  });

  it("renames a group on the master only", async () => {
    const token = await login(sim.url);
    assert.equal((await postJson(`${sim.url}/oneview/group/2`, set(token, { label: "Web" }))).retCode, 0);
    assert.equal((await getJson(`${sim.url}/oneview/group/2/label`)).data, "Web");
    assert.equal((await postJson(`${sim.url}/oneview/group/77`, set(token, { label: "x" }))).retCode, 3001);
    const member = sim.units[1]?.url ?? "";
    const memberToken = await login(member);
    assert.equal(
      (await postJson(`${member}/oneview/group/2`, set(memberToken, { label: "x" }))).retCode,
      3001,
    );
  });
});
