/**
 * A flood of traps (docs/events.md, "Dropped and counted"), scaled down from the bench's 30 s
 * (bench/traps.ts measures the lateness of every poll at 1,000 PDUs): 1,000 traps a second for 5 s
 * from a configured PDU's address and as many from an unknown one (::1), into the real App while
 * it polls three other instances every second. The other instances are still polled all along; the
 * flooded instance gets at most one extra poll a second; what the flood leaves in memory is bounded
 * (the MQTT events of the instance stop at their burst and the rest is counted in a `folded` event,
 * the console keeps a few a second); and the counters add up to what was sent: every trap from the
 * PDU an event, every one from ::1 an `unknown-source` drop (less only what the kernel itself
 * dropped, which /proc/net/snmp counts).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import http from "node:http";
import snmp from "net-snmp";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { EVENT_BURST } from "../../src/mqtt/alarms.js";
import { RECENT_EVENTS } from "../../src/ui/alarms.js";
import { TRAPS_SHOWN_PER_SECOND } from "../../src/ui/feed.js";
import { freeUdpPort, metricValue } from "../../testkit/traps.js";

const COMMUNITY = "flood";
const RATE = 1000;
const FLOOD_MS = 5000;
const OTHERS = ["p1", "p2", "p3"];
const KEY = "flood-test-key-0123456789abcdef0";

/** Sends `RATE` rPDUOutletOn traps a second from `host` for `FLOOD_MS`; resolves to the count sent. */
async function flood(host: "127.0.0.1" | "::1", port: number): Promise<number> {
  const session = snmp.createSession(host, COMMUNITY, {
    trapPort: port,
    version: snmp.Version2c,
    transport: host === "::1" ? "udp6" : "udp4",
  });
  session.on("error", () => undefined);
  const varbinds = [{ oid: "1.3.6.1.4.1.318.1.1.12.3.3.1.1.1.0", type: snmp.ObjectType.Integer, value: 1 }];
  let sent = 0;
  const started = Date.now();
  const total = (FLOOD_MS / 1000) * RATE;
  while (sent < total) {
    const due = Math.min(Math.floor(((Date.now() - started) / 1000) * RATE), total);
    for (; sent < due; sent++) session.trap("1.3.6.1.4.1.318.0.268", varbinds, () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // Let the last datagrams leave before the socket closes.
  await new Promise((resolve) => setTimeout(resolve, 200));
  session.close();
  return sent;
}

/** The kernel's count of UDP datagrams it dropped for a full receive buffer (IPv4 and IPv6). */
function kernelUdpDrops(): number {
  const v4 = readFileSync("/proc/net/snmp", "utf8")
    .split("\n")
    .filter((l) => l.startsWith("Udp: "));
  const names = v4[0]?.split(/\s+/) ?? [];
  const values = v4[1]?.split(/\s+/) ?? [];
  const v4drops = Number(values[names.indexOf("RcvbufErrors")] ?? 0);
  const v6 = /^Udp6RcvbufErrors\s+(\d+)$/m.exec(readFileSync("/proc/net/snmp6", "utf8"));
  return v4drops + Number(v6?.[1] ?? 0);
}

/** The console's recent events, as a page opening its event stream gets them. */
function recentEvents(port: number): Promise<{ kind: string }[]> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      { host: "127.0.0.1", port, path: "/api/v1/events?snapshots=false", headers: { "X-Api-Key": KEY } },
      (response) => {
        let buffer = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          buffer += chunk;
          const frame = /event: recent\ndata: (.*)\n\n/.exec(buffer);
          if (frame === null) return;
          request.destroy();
          resolve((JSON.parse(frame[1] ?? "{}") as { events: { kind: string }[] }).events);
        });
      },
    );
    request.on("error", reject);
  });
}

describe("a flood of traps", () => {
  const sims: SnmpSimulator[] = [];
  let h: AppHarness<never>;
  let trapPort: number;

  before(async () => {
    trapPort = await freeUdpPort();
    for (let i = 0; i <= OTHERS.length; i++)
      sims.push(await startSnmpSimulator({ profile: "apc-rpdu2", port: 0, community: "lab", frozen: true }));
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "Pdus:",
          // p0 first: traps by community from 127.0.0.1 are its own.
          ...sims.flatMap((sim, i) => [
            `  p${i}:`,
            "    Driver: snmp",
            `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
            `    PollInterval: ${i === 0 ? 30 : 1}`,
          ]),
          `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: ${KEY} }`,
          `Traps: { Enabled: true, Port: ${trapPort} }`,
        ].join("\n"),
      env: {
        ...Object.fromEntries(sims.map((_, i) => [`SERVICE_PDU_P${i}_COMMUNITY`, "lab"])),
        SERVICE_TRAP_COMMUNITIES: COMMUNITY,
      },
      waitForFirstPolls: true,
    });
  });
  after(async () => {
    await h?.close();
    await Promise.all(sims.map((s) => s.close()));
  });

  it("1,000/s from a PDU and from an unknown address: the others still polled, memory bounded, the counters right", async () => {
    const metrics = async () => (await h.health.get("/metrics")).text;
    const polls = new Map<string, number[]>(OTHERS.map((id) => [id, []]));
    h.app.bus.on("pollDone", ({ instanceId }) => polls.get(instanceId)?.push(Date.now()));
    const before = await metrics();
    const kernelBefore = kernelUdpDrops();
    const started = Date.now();
    const [fromPdu, fromUnknown] = await Promise.all([flood("127.0.0.1", trapPort), flood("::1", trapPort)]);
    const floodEnded = Date.now();
    assert.equal(fromPdu, (FLOOD_MS / 1000) * RATE);
    assert.equal(fromUnknown, fromPdu);

    // The counters: every datagram the kernel handed over is counted once, as an event or a drop.
    const delta = (text: string, series: string) => metricValue(text, series) - metricValue(before, series);
    const events = (t: string) => delta(t, 'pdu_trap_events_total{instance="p0",kind="outlet-switched"}');
    const unknown = (t: string) => delta(t, 'pdu_trap_dropped_total{reason="unknown-source"}');
    await waitFor(
      async () => {
        const text = await metrics();
        const lost = fromPdu + fromUnknown - events(text) - unknown(text);
        return lost >= 0 && lost <= kernelUdpDrops() - kernelBefore;
      },
      "every trap counted (less what the kernel dropped)",
      20_000,
    );
    const text = await metrics();
    const kernelLost = kernelUdpDrops() - kernelBefore;
    assert.ok(events(text) <= fromPdu && unknown(text) <= fromUnknown, "nothing counted twice");
    assert.ok(
      events(text) >= fromPdu - kernelLost,
      `events ${events(text)} of ${fromPdu} (kernel lost ${kernelLost})`,
    );
    assert.ok(unknown(text) >= fromUnknown - kernelLost, `unknown ${unknown(text)} of ${fromUnknown}`);
    for (const reason of ["malformed", "bad-community", "bad-user", "bad-auth"])
      assert.equal(delta(text, `pdu_trap_dropped_total{reason="${reason}"}`), 0, reason);

    // The flooded instance: at most one extra poll a second (and the one trailing the last second).
    const seconds = (floodEnded - started) / 1000;
    const extra = delta(text, 'pdu_trap_polls_total{instance="p0"}');
    assert.ok(extra >= 1 && extra <= Math.ceil(seconds) + 2, `${extra} extra polls of p0 in ${seconds} s`);

    // The other instances were polled through the flood, each about every second.
    for (const [id, times] of polls) {
      const during = times.filter((t) => t >= started && t <= floodEnded);
      assert.ok(
        during.length >= FLOOD_MS / 1000 - 2,
        `${id} polled ${during.length} times during the 5 s flood`,
      );
    }

    // Bounded: the instance's MQTT events stop at their burst, the rest counted in a folded event.
    const mqtt = () =>
      h.mqtt.on(`${h.parent}/p0/events`).map((m) => JSON.parse(m.payload) as Record<string, unknown>);
    await waitFor(
      () => {
        const all = mqtt();
        const told = all.filter((e) => e.event_type === "trap").length;
        const folded = all.filter((e) => e.event_type === "folded").reduce((s, e) => s + Number(e.count), 0);
        return told + folded === events(text) && told;
      },
      "the trap events on MQTT told or folded, each once",
      20_000,
    );
    const told = mqtt().filter((e) => e.event_type === "trap").length;
    assert.ok(told <= 2 * EVENT_BURST, `${told} trap events on MQTT: at most the burst of each 10 s window`);
    // The console keeps a few a second of them: its recent events (alarms, controls) are not all traps.
    const recent = await recentEvents(h.app.endpoints.apiPort ?? 0);
    const shown = recent.filter((e) => e.kind === "trap").length;
    assert.ok(
      shown <= TRAPS_SHOWN_PER_SECOND * Math.ceil(seconds + 1),
      `${shown} trap events kept for the console`,
    );
    assert.ok(shown < RECENT_EVENTS, `${shown} of the console's ${RECENT_EVENTS} recent events are traps`);
    console.log(
      `# flood: ${events(text)}/${fromPdu} events, ${unknown(text)}/${fromUnknown} unknown-source drops, ` +
        `kernel lost ${kernelLost}; ${extra} extra polls of p0; ${told} told on MQTT; ${shown} kept for the console`,
    );
  });
});
