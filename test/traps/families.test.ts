/**
 * CyberPower (CPS-MIB `ePDU` and `ePDU2`) and ServerTech Sentry3 traps through the whole bridge
 * (docs/events.md, "What each family's table reads"): the real App with `Traps.Enabled` receives
 * the traps the simulated units send when an outlet is switched at their panel, and Debian's
 * `snmptrap` sends the load and branch traps their MIBs define. Each becomes its typed event on
 * `P/<instance>/events` and polls its instance at once: the new state is on MQTT long before the
 * next regular poll (30 s).
 *
 * The bridge knows a PDU by its source address: the `ePDU` unit sends from 127.0.0.1 with a
 * community (the first instance there), the `ePDU2` unit from ::1, and the Sentry3 unit, also at
 * 127.0.0.1, with its own SNMPv3 user.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { freeUdpPort, metricValue } from "../../testkit/traps.js";

const run = promisify(execFile);
const COMMUNITY = "family-traps";
const V3 = { user: "sentry3", authKey: "sentry3-auth-key", privKey: "sentry3-priv-key" };
const CPS = "1.3.6.1.4.1.3808";
const ST3 = "1.3.6.1.4.1.1718.3";

/** `snmptrap` v2c from 127.0.0.1: the trap OID and its varbinds as `oid type value` triples. */
function snmptrapV2c(port: number, trapOid: string, ...varbinds: string[]) {
  return run("snmptrap", ["-v2c", "-c", COMMUNITY, `udp:127.0.0.1:${port}`, "", trapOid, ...varbinds]);
}

/** `snmptrap` v3 authPriv with the Sentry3 instance's user. */
function snmptrapV3(port: number, trapOid: string, ...varbinds: string[]) {
  return run("snmptrap", [
    ...["-v3", "-e", "0x80001f8880aabbccee", "-u", V3.user, "-l", "authPriv"],
    ...["-a", "SHA", "-A", V3.authKey, "-x", "AES", "-X", V3.privKey],
    `udp:127.0.0.1:${port}`,
    "",
    trapOid,
    ...varbinds,
  ]);
}

describe("CyberPower and Sentry3 traps", () => {
  let cps: SnmpSimulator;
  let cps2: SnmpSimulator;
  let st3: SnmpSimulator;
  let h: AppHarness<never>;
  let trapPort: number;

  before(async () => {
    trapPort = await freeUdpPort();
    cps = await startSnmpSimulator({
      profile: "cyberpower-epdu",
      port: 0,
      community: "lab",
      frozen: true,
      trapTo: { host: "127.0.0.1", port: trapPort, community: COMMUNITY },
    });
    cps2 = await startSnmpSimulator({
      profile: "cyberpower-epdu2",
      host: "::1",
      port: 0,
      community: "lab",
      frozen: true,
      trapTo: { host: "::1", port: trapPort, community: COMMUNITY },
    });
    st3 = await startSnmpSimulator({
      profile: "servertech-sentry3",
      port: 0,
      frozen: true,
      v3: { user: V3.user, authProtocol: "sha", authKey: V3.authKey, privKey: V3.privKey },
    });
    const v2c = (id: string, host: string, port: number) => [
      `  ${id}:`,
      "    Driver: snmp",
      `    Connection: { Host: "${host}", Port: ${port}, Timeout: 2 }`,
      "    PollInterval: 30",
    ];
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          ...v2c("cps", "127.0.0.1", cps.port),
          ...v2c("cps2", "::1", cps2.port),
          "  st3:",
          "    Driver: snmp",
          `    Connection: { Host: 127.0.0.1, Port: ${st3.port}, Timeout: 2 }`,
          "    PollInterval: 30",
          `    Snmp: { Version: 3, Auth: { Username: ${V3.user}, Protocol: sha, PrivProtocol: aes } }`,
          `Traps: { Enabled: true, Port: ${trapPort} }`,
        ].join("\n"),
      env: {
        SERVICE_PDU_CPS_COMMUNITY: "lab",
        SERVICE_PDU_CPS2_COMMUNITY: "lab",
        SERVICE_PDU_ST3_AUTH_KEY: V3.authKey,
        SERVICE_PDU_ST3_PRIV_KEY: V3.privKey,
        SERVICE_TRAP_COMMUNITIES: COMMUNITY,
      },
      waitForFirstPolls: true,
    });
  });
  after(async () => {
    await h?.close();
    await Promise.all([cps?.close(), cps2?.close(), st3?.close()]);
  });

  const outletTopic = (id: string, outlet: number) => {
    const device = h.app.store.get(id)?.snapshot?.devices[0]?.id ?? "";
    return `${h.parent}/${id}/${device}/outlets/${outlet - 1}/state`;
  };
  const events = (id: string) =>
    h.mqtt
      .on(`${h.parent}/${id}/events`)
      .map((m) => JSON.parse(m.payload) as Record<string, unknown>)
      .filter((e) => e.event_type === "trap");
  const metrics = async () => (await h.health.get("/metrics")).text;
  const polls = async (id: string) => metricValue(await metrics(), `pdu_trap_polls_total{instance="${id}"}`);

  /** Switches `outlet` off at the unit, runs `send` (the trap), and waits for the state on MQTT. */
  async function switchedOff(id: string, sim: SnmpSimulator, outlet: number, send: () => Promise<unknown>) {
    const topic = outletTopic(id, outlet);
    await waitFor(() => h.mqtt.last(topic)?.payload === "on", `outlet ${outlet} of ${id} on at ${topic}`);
    const polledBefore = h.app.store.get(id)?.lastSuccessUtc ?? 0;
    const pollsBefore = await polls(id);
    await send();
    // The next regular poll is up to 30 s away: the state arriving before 10 s is the trap's poll.
    await waitFor(
      () => h.mqtt.last(topic)?.payload === "off",
      `outlet ${outlet} of ${id} off on MQTT`,
      10_000,
    );
    assert.ok((h.app.store.get(id)?.lastSuccessUtc ?? 0) > polledBefore, `a poll of ${id} after the trap`);
    assert.equal((await polls(id)) - pollsBefore, 1, `the trap asked for one poll of ${id}`);
  }

  it("CyberPower ePDU: ePDUOutletOff from the unit's panel is an outlet-switched event and polls at once", async () => {
    await switchedOff("cps", cps, 3, () => Promise.resolve(cps.panelSwitch(3, "off")));
    await waitFor(() => events("cps").length > 0, "a trap event on P/cps/events");
    const [event] = events("cps");
    assert.deepEqual(
      {
        kind: event?.kind,
        trap: event?.trap,
        outlet: event?.outlet,
        state: event?.state,
        label: event?.label,
      },
      { kind: "outlet-switched", trap: "ePDUOutletOff", outlet: 3, state: "off", label: "Outlet3" },
    );
  });

  it("CyberPower ePDU2: pduOutletSwitchedEvent from ::1 names the outlet; the poll it asks for reads the state", async () => {
    await switchedOff("cps2", cps2, 4, () => Promise.resolve(cps2.panelSwitch(4, "off")));
    const event = events("cps2").find((e) => e.trap === "pduOutletSwitchedEvent");
    assert.ok(event !== undefined, "the ePDU2 trap's event on P/cps2/events");
    assert.equal(event.kind, "outlet-switched");
    assert.equal(event.outlet, 4);
    assert.equal(event.state, null);
  });

  it("Sentry3: outletChangeEvent over SNMPv3 is the outlet switched, and polls at once", async () => {
    await switchedOff("st3", st3, 3, async () => {
      st3.panelSwitch(3, "off"); // this unit sends no trap itself (no destination): snmptrap does
      await snmptrapV3(
        trapPort,
        `${ST3}.100.0.6`,
        ...[`${ST3}.2.3.1.2.1.1.3`, "s", "AA3"],
        ...[`${ST3}.2.3.1.3.1.1.3`, "s", "db-03"],
        ...[`${ST3}.2.3.1.5.1.1.3`, "i", "0"],
      );
    });
    await waitFor(() => events("st3").some((e) => e.trap === "outletChangeEvent"), "the Sentry3 event");
    const event = events("st3").find((e) => e.trap === "outletChangeEvent");
    assert.deepEqual(
      { kind: event?.kind, outlet: event?.outlet, state: event?.state, label: event?.label },
      { kind: "outlet-switched", outlet: 3, state: "off", label: "db-03" },
    );
  });

  it("load and breaker traps: ePDUBankOverload, ePDUOutletNearOverload, Sentry3 branchStatusEvent onFuse and outletLoadEvent", async () => {
    await snmptrapV2c(trapPort, `${CPS}.0.128`, `${CPS}.1.1.3.2.3.1.1.5.0`, "i", "1");
    await snmptrapV2c(trapPort, `${CPS}.0.134`, `${CPS}.1.1.3.3.4.3.1.3.0`, "i", "4");
    await snmptrapV3(
      trapPort,
      `${ST3}.100.0.14`,
      `${ST3}.2.7.1.3.1.1.1`,
      "s",
      "Branch A",
      `${ST3}.2.7.1.5.1.1.1`,
      "i",
      "9",
    );
    await snmptrapV3(trapPort, `${ST3}.100.0.5`, `${ST3}.2.3.1.6.1.1.3`, "i", "5");
    await waitFor(
      () =>
        events("cps").filter((e) => e.kind === "load-state").length === 2 &&
        events("st3").filter((e) => e.kind !== "outlet-switched").length === 2,
      "the four events",
    );
    const pick = (id: string, trap: string) => {
      const e = events(id).find((x) => x.trap === trap);
      return { kind: e?.kind, outlet: e?.outlet, state: e?.state };
    };
    assert.deepEqual(pick("cps", "ePDUBankOverload"), {
      kind: "load-state",
      outlet: null,
      state: "critical",
    });
    assert.deepEqual(pick("cps", "ePDUOutletNearOverload"), {
      kind: "load-state",
      outlet: 4,
      state: "warning",
    });
    assert.deepEqual(pick("st3", "branchStatusEvent"), {
      kind: "breaker-tripped",
      outlet: null,
      state: "tripped",
    });
    assert.deepEqual(pick("st3", "outletLoadEvent"), { kind: "load-state", outlet: 3, state: "critical" });
    const text = await metrics();
    assert.equal(metricValue(text, 'pdu_trap_events_total{instance="cps",kind="load-state"}'), 2);
    assert.equal(metricValue(text, 'pdu_trap_events_total{instance="st3",kind="breaker-tripped"}'), 1);
    assert.equal(metricValue(text, 'pdu_trap_events_total{instance="cps2",kind="other"}'), 0);
  });
});
