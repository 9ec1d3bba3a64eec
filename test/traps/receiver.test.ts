/**
 * The SNMP trap receiver through the whole bridge (docs/events.md, "SNMP traps"): the real App with
 * `Traps.Enabled` is the receiver; traps come from the project's SNMP simulator when an outlet is
 * switched at its panel, and from Debian's `snmptrap` (v2c, and v3 authPriv with an instance's
 * user). An accepted trap polls its instance at once (at most one extra poll a second) and is an
 * event on `P/<instance>/events`; unknown sources, wrong communities and users, and broken packets
 * are dropped and counted, and logged folded, not per packet.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createSocket } from "node:dgram";
import { promisify } from "node:util";
import snmp from "net-snmp";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { freeUdpPort, metricValue } from "../../testkit/traps.js";

const run = promisify(execFile);
const COMMUNITY = "trap-lab";
const V3 = { user: "trapper", authKey: "trap-auth-key-1", privKey: "trap-priv-key-1" };

function snmptrapV2c(port: number, community: string, host = "127.0.0.1", ...varbinds: string[]) {
  const target = host.includes(":") ? `udp6:[${host}]:${port}` : `udp:${host}:${port}`;
  return run("snmptrap", ["-v2c", "-c", community, target, "", "1.3.6.1.4.1.318.0.268", ...varbinds]);
}

function snmptrapV3(port: number, authKey: string, user = V3.user) {
  return run("snmptrap", [
    ...["-v3", "-e", "0x80001f8880aabbccdd", "-u", user, "-l", "authPriv"],
    ...["-a", "SHA", "-A", authKey, "-x", "AES", "-X", V3.privKey],
    `udp:127.0.0.1:${port}`,
    "",
    "1.3.6.1.4.1.1718.4.100.0.16",
    ...["1.3.6.1.4.1.1718.4.1.8.3.1.1.1.1.2", "i", "2"],
  ]);
}

/**
 * The first datagram an SNMPv3 session sends: its engine discovery probe (no user, no engine id),
 * which an SNMPv3 receiver answers with a report. Caught on a socket of the test's own.
 */
async function discoveryProbe(): Promise<Buffer> {
  const catcher = createSocket("udp4");
  await new Promise<void>((resolve) => catcher.bind(0, "127.0.0.1", () => resolve()));
  const port = (catcher.address() as { port: number }).port;
  const caught = new Promise<Buffer>((resolve) => catcher.once("message", (m) => resolve(m)));
  const session = snmp.createV3Session(
    "127.0.0.1",
    {
      name: V3.user,
      level: snmp.SecurityLevel.authPriv,
      authProtocol: snmp.AuthProtocols.sha,
      authKey: V3.authKey,
      privProtocol: snmp.PrivProtocols.aes,
      privKey: V3.privKey,
    },
    { port, retries: 0, timeout: 500 },
  );
  session.on("error", () => undefined);
  session.get(["1.3.6.1.2.1.1.1.0"], () => undefined);
  try {
    return await caught;
  } finally {
    session.close();
    catcher.close();
  }
}

describe("SNMP traps", () => {
  let pdu: SnmpSimulator;
  let quick: SnmpSimulator;
  let v3: SnmpSimulator;
  let h: AppHarness<never>;
  let trapPort: number;

  before(async () => {
    trapPort = await freeUdpPort();
    const trapTo = { host: "127.0.0.1", port: trapPort, community: COMMUNITY };
    pdu = await startSnmpSimulator({ profile: "apc-rpdu2", port: 0, community: "lab", trapTo, frozen: true });
    quick = await startSnmpSimulator({
      profile: "apc-rpdu2",
      port: 0,
      community: "lab",
      trapTo,
      frozen: true,
    });
    v3 = await startSnmpSimulator({
      profile: "servertech-sentry4",
      port: 0,
      frozen: true,
      v3: { user: V3.user, authProtocol: "sha", authKey: V3.authKey, privKey: V3.privKey },
    });
    const v2c = (id: string, port: number, interval: number) => [
      `  ${id}:`,
      "    Driver: snmp",
      `    Connection: { Host: 127.0.0.1, Port: ${port}, Timeout: 2 }`,
      `    PollInterval: ${interval}`,
    ];
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          // Traps by community from 127.0.0.1 are the first instance's there: `sim`.
          ...v2c("sim", pdu.port, 30),
          // The trap-lost case: no trap comes, the state arrives with the next poll (3 s here).
          ...v2c("quick", quick.port, 3),
          "  v3pdu:",
          "    Driver: snmp",
          `    Connection: { Host: 127.0.0.1, Port: ${v3.port}, Timeout: 2 }`,
          "    PollInterval: 30",
          `    Snmp: { Version: 3, Auth: { Username: ${V3.user}, Protocol: sha, PrivProtocol: aes } }`,
          `Traps: { Enabled: true, Port: ${trapPort} }`,
        ].join("\n"),
      env: {
        SERVICE_PDU_SIM_COMMUNITY: "lab",
        SERVICE_PDU_QUICK_COMMUNITY: "lab",
        SERVICE_PDU_V3PDU_AUTH_KEY: V3.authKey,
        SERVICE_PDU_V3PDU_PRIV_KEY: V3.privKey,
        SERVICE_TRAP_COMMUNITIES: `other, ${COMMUNITY}`,
      },
      waitForFirstPolls: true,
    });
  });
  after(async () => {
    await h?.close();
    await pdu?.close();
    await quick?.close();
    await v3?.close();
  });

  /** The state topic of the PDU's outlet `outlet` (1-based; topics are 0-based). */
  const outletTopic = (id: string, outlet: number) => {
    const device = h.app.store.get(id)?.snapshot?.devices[0]?.id ?? "";
    return `${h.parent}/${id}/${device}/outlets/${outlet - 1}/state`;
  };
  const metrics = async () => (await h.health.get("/metrics")).text;

  it("an outlet switched at the PDU's panel: its trap polls at once, the new state on MQTT long before the 30 s poll", async () => {
    const topic = outletTopic("sim", 1);
    await waitFor(() => h.mqtt.last(topic)?.payload === "on", `outlet 1 of sim on at ${topic}`);
    const polledBefore = h.app.store.get("sim")?.lastSuccessUtc ?? 0;
    const switched = Date.now();
    pdu.panelSwitch(1, "off");
    // The next regular poll of `sim` is up to 30 s away: the state arriving well before it is the
    // trap's poll (its counter says so below).
    await waitFor(() => h.mqtt.last(topic)?.payload === "off", "outlet 1 off on MQTT", 10_000);
    const latency = Date.now() - switched;
    assert.ok((h.app.store.get("sim")?.lastSuccessUtc ?? 0) > polledBefore, "a poll after the trap");
    const text = await metrics();
    assert.equal(metricValue(text, 'pdu_trap_events_total{instance="sim",kind="outlet-switched"}'), 1);
    assert.equal(metricValue(text, 'pdu_trap_polls_total{instance="sim"}'), 1);
    // The event on the instance's events topic.
    const event = h.mqtt.on(`${h.parent}/sim/events`).find((m) => m.payload.includes('"trap"'));
    assert.ok(event !== undefined, "a trap event on P/sim/events");
    const payload = JSON.parse(event.payload) as Record<string, unknown>;
    assert.equal(payload.event_type, "trap");
    assert.equal(payload.kind, "outlet-switched");
    assert.equal(payload.trap, "rPDUOutletOff");
    assert.equal(payload.outlet, 1);
    assert.equal(payload.state, "off");
    console.log(`# trap to MQTT: ${latency} ms`);
  });

  it("the same with the trap lost: the state arrives with the next poll", async () => {
    const topic = outletTopic("quick", 3);
    await waitFor(() => h.mqtt.last(topic)?.payload === "on", `outlet 3 of quick on at ${topic}`);
    quick.setTrapsLost(true);
    const sent = quick.trapsSent();
    const switched = Date.now();
    quick.panelSwitch(3, "off");
    // A poll that began before the switch may end after it and still read "on": the next one reads "off".
    await h.waitForPoll("quick", switched);
    await waitFor(
      () => h.app.store.get("quick")?.snapshot?.devices[0]?.outlets[2]?.state === "off",
      "a poll of quick reading outlet 3 off",
      15_000,
    );
    await waitFor(() => h.mqtt.last(topic)?.payload === "off", "outlet 3 of quick off on MQTT");
    assert.equal(quick.trapsSent(), sent, "no trap was sent");
    assert.equal(metricValue(await metrics(), 'pdu_trap_polls_total{instance="quick"}'), 0);
  });

  it("snmptrap v2c with a configured community, and v3 authPriv with the instance's user, are accepted", async () => {
    await snmptrapV2c(trapPort, COMMUNITY, "127.0.0.1", "1.3.6.1.4.1.318.1.1.12.3.3.1.1.1.0", "i", "5");
    await snmptrapV3(trapPort, V3.authKey);
    await waitFor(async () => {
      const text = await metrics();
      return metricValue(text, 'pdu_trap_events_total{instance="v3pdu",kind="outlet-switched"}') === 1;
    }, "the v3 trap counted for v3pdu");
    const events = () =>
      h.mqtt.on(`${h.parent}/v3pdu/events`).map((m) => JSON.parse(m.payload) as Record<string, unknown>);
    await waitFor(
      () =>
        events().some((e) => e.trap === "st4OutletStateChangeEvent" && e.outlet === 2 && e.state === "off"),
      "the v3 trap's event on P/v3pdu/events",
    );
    await waitFor(
      () => h.mqtt.on(`${h.parent}/sim/events`).some((m) => m.payload.includes('"outlet":5')),
      "the v2c trap's event for outlet 5 of sim",
    );
  });

  it("unknown sources, wrong communities and users, bad keys and broken packets are dropped and counted, not logged per packet", async () => {
    const before = await metrics();
    const reasons = ["unknown-source", "bad-community", "bad-user", "bad-auth", "malformed"];
    const was = Object.fromEntries(
      reasons.map((r) => [r, metricValue(before, `pdu_trap_dropped_total{reason="${r}"}`)]),
    );
    const events = metricValue(before, 'pdu_trap_events_total{instance="sim",kind="outlet-switched"}');
    for (let i = 0; i < 5; i++) await snmptrapV2c(trapPort, "wrong-community");
    await snmptrapV2c(trapPort, COMMUNITY, "::1");
    await snmptrapV3(trapPort, "wrong-auth-key-9");
    await snmptrapV3(trapPort, V3.authKey, "nobody");
    const raw = createSocket("udp4");
    for (const junk of [
      Buffer.from("not snmp"),
      Buffer.alloc(0),
      Buffer.from([0x30, 0x82, 0xff, 0xff, 0x02]),
    ])
      await new Promise<void>((resolve) => raw.send(junk, trapPort, "127.0.0.1", () => resolve()));
    raw.close();
    await waitFor(async () => {
      const text = await metrics();
      return (
        metricValue(text, 'pdu_trap_dropped_total{reason="bad-community"}') - was["bad-community"]! === 5 &&
        metricValue(text, 'pdu_trap_dropped_total{reason="unknown-source"}') - was["unknown-source"]! === 1 &&
        metricValue(text, 'pdu_trap_dropped_total{reason="bad-auth"}') - was["bad-auth"]! === 1 &&
        metricValue(text, 'pdu_trap_dropped_total{reason="bad-user"}') - was["bad-user"]! === 1 &&
        metricValue(text, 'pdu_trap_dropped_total{reason="malformed"}') - was.malformed! >= 2
      );
    }, "every bad trap counted by its reason");
    assert.equal(
      metricValue(await metrics(), 'pdu_trap_events_total{instance="sim",kind="outlet-switched"}'),
      events,
    );
    // Five wrong communities: one line now, the rest in the fold's summary.
    const lines = h.logs().filter((l) => l.msg === "SNMP trap dropped" && l.reason === "bad-community");
    assert.equal(lines.length, 1);
    assert.ok(!h.logText().includes("wrong-community"), "no community in the log");
  });

  it("a datagram from an unknown source is not read: an SNMPv3 discovery probe from there gets no report", async () => {
    const probe = await discoveryProbe();
    const ask = async (host: "127.0.0.1" | "::1") => {
      const socket = createSocket(host === "::1" ? "udp6" : "udp4");
      const answers: Buffer[] = [];
      socket.on("message", (m) => answers.push(m));
      await new Promise<void>((resolve) => socket.bind(0, host, () => resolve()));
      await new Promise<void>((resolve) => socket.send(probe, trapPort, host, () => resolve()));
      return { answers, close: () => socket.close() };
    };
    // A configured PDU's address: the receiver reads the probe and answers with its report.
    const known = await ask("127.0.0.1");
    try {
      await waitFor(() => known.answers.length > 0, "a report to the probe from 127.0.0.1");
    } finally {
      known.close();
    }
    const was = metricValue(await metrics(), 'pdu_trap_dropped_total{reason="unknown-source"}');
    const unknown = await ask("::1");
    try {
      await waitFor(
        async () =>
          metricValue(await metrics(), 'pdu_trap_dropped_total{reason="unknown-source"}') === was + 1,
        "the probe from ::1 counted as unknown-source",
      );
      // The receiver answers in the turn it reads a datagram: by the time its drop is counted (and
      // a scrape has come back), a report would have arrived.
      assert.deepEqual(unknown.answers, [], "nothing sent back to an unknown source");
    } finally {
      unknown.close();
    }
  });

  it("a hostile trap from a configured PDU is read within the bounds and throws nothing", async () => {
    const session = snmp.createSession("127.0.0.1", COMMUNITY, { trapPort, version: snmp.Version2c });
    const huge: snmp.Varbind[] = [
      { oid: "1.3.6.1.4.1.318.1.1.12.3.3.1.1.1.0", type: snmp.ObjectType.Integer, value: 2 ** 31 - 1 },
      ...Array.from({ length: 100 }, (_, i) => ({
        oid: `1.3.6.1.4.1.318.2.3.3.${i}`,
        type: snmp.ObjectType.OctetString,
        value: Buffer.from("\u0000\u001b[31m".repeat(100)),
      })),
    ];
    const before = metricValue(
      await metrics(),
      'pdu_trap_events_total{instance="sim",kind="outlet-switched"}',
    );
    await new Promise<void>((resolve) => session.trap("1.3.6.1.4.1.318.0.269", huge, () => resolve()));
    // A trap OID no table names: an `other` event.
    await new Promise<void>((resolve) => session.trap("1.3.6.1.4.1.99999.0.1", [], () => resolve()));
    session.close();
    await waitFor(async () => {
      const text = await metrics();
      return (
        metricValue(text, 'pdu_trap_events_total{instance="sim",kind="outlet-switched"}') === before + 1 &&
        metricValue(text, 'pdu_trap_events_total{instance="sim",kind="other"}') >= 1
      );
    }, "both hostile traps made events");
    // An outlet number past the bounds is no outlet.
    await waitFor(
      () =>
        h.mqtt
          .on(`${h.parent}/sim/events`)
          .map((m) => JSON.parse(m.payload) as Record<string, unknown>)
          .some((e) => e.trap === "rPDUOutletOff" && e.outlet === null && e.state === "off"),
      "the hostile trap's event without an outlet",
    );
    assert.equal(h.app.store.get("sim")?.consecutiveFailures, 0);
  });

  it("a burst of traps asks for at most one extra poll per instance per second", async () => {
    const session = snmp.createSession("127.0.0.1", COMMUNITY, { trapPort, version: snmp.Version2c });
    const polls = () => metrics().then((t) => metricValue(t, 'pdu_trap_polls_total{instance="sim"}'));
    // Quiet first (the earlier tests' trailing polls done), so the burst's first trap polls at once.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const start = await polls();
    const started = Date.now();
    const varbinds = [{ oid: "1.3.6.1.4.1.318.2.3.1.0", type: snmp.ObjectType.Integer, value: 1 }];
    for (let i = 0; i < 50; i++) session.trap("1.3.6.1.4.1.318.0.268", varbinds, () => undefined);
    await waitFor(async () => (await polls()) >= start + 1, "the burst's first poll");
    // Its second and last poll comes at the end of the second after the first.
    await waitFor(async () => (await polls()) >= start + 2, "the burst's one trailing poll");
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const seconds = (Date.now() - started) / 1000;
    const asked = (await polls()) - start;
    session.close();
    assert.equal(asked, 2, `50 traps asked for ${asked} polls in ${seconds.toFixed(1)} s`);
  });
});
