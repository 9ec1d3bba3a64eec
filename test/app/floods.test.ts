/**
 * Log and event floods driven from outside, through the composed App: garbage MQTT commands and a
 * PDU whose alarms flap on every poll. What the service writes is bounded (the audit and alarm log
 * lines, the MQTT alarm events), and nothing is lost but the repetition: lines that count what was
 * folded ("… and N more like this in the last 10 s", `folded`) and `folded` events account for
 * every command and every alarm change.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ControlEvent } from "../../src/bus.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const OUTLETS = 128;

/** Lines and what they stand for: a folding line counts its `folded`, any other line one. */
const counted = (lines: readonly Record<string, unknown>[]): number =>
  lines.reduce((n, l) => n + (typeof l.folded === "number" ? l.folded : 1), 0);

describe("floods from outside", () => {
  let h: AppHarness<"rack">;
  const commands: ControlEvent[] = [];
  let alarmChanges = 0;

  before(async () => {
    h = await startAppHarness<"rack">({
      sims: { rack: { outlets: OUTLETS } },
      yaml: (s) => appYaml({ pdus: [pduYaml("lab", s.rack, { actionsEnabled: true, pollInterval: 1 })] }),
      waitForFirstPolls: true,
    });
    h.app.bus.on("control", (e) => {
      if (e.source.surface === "mqtt" && !e.source.topic.includes("/probe/")) commands.push(e);
    });
    h.app.bus.on("alarms", (e) => (alarmChanges += e.changes.length));
    await h.commandsReady("lab");
  });
  after(() => h?.close());

  it("5,000 garbage MQTT commands: a bounded number of audit lines that count every one", async (t) => {
    const dev = h.sims.rack.deviceIds()[0]!;
    const N = 5000;
    const topics = [
      (i: number) => `${h.parent}/lab/${dev}/outlets/${i % 8}/set`, // bad payload
      (i: number) => `${h.parent}/lab/${dev}/outlets/${i % 8}/resetStats`, // over 1 KiB below
      (i: number) => `${h.parent}/lab/dev-${i}/outlets/0/set`, // unknown device: the core's 404
      (i: number) => `${h.parent}/lab/${dev}/outlets/0${i}/set`, // not a command topic
    ];
    const seen = commands.length;
    const lines = () => h.mqttAudits().length;
    const before = lines();
    const bytesBefore = h.logText().length;
    for (let i = 0; i < N; i += 1) {
      const payload = i % 4 === 2 ? "on" : `garbage-${i}-${"x".repeat(i % 4 === 1 ? 1100 : 200)}`;
      void h.mqtt.publish(topics[i % topics.length]!(i), payload);
    }
    await waitFor(() => commands.length - seen === N, "every command's audit on the bus", 60_000);
    assert.ok(
      commands.slice(seen).every((e) => e.status !== 200),
      "every one refused",
    );
    const written = lines() - before;
    assert.ok(written <= 200, `${written} audit lines for ${N} commands`);
    const bytes = h.logText().length - bytesBefore;
    t.diagnostic(`${N} garbage commands: ${written} audit lines, ${bytes} bytes of log`);
    assert.ok(bytes < 200_000, `${bytes} bytes of log for ${N} commands`);
    // Once the windows end, the lines that count the folded ones account for every command.
    await waitFor(() => counted(h.mqttAudits().slice(before)) === N, "every command counted", 30_000);
    const folding = h
      .mqttAudits()
      .slice(before)
      .find((l) => typeof l.folded === "number");
    assert.match(String(folding?.msg), /^control … and [\d,]+ more like this in the last 10 s$/);
  });

  it("a PDU whose alarms flap on every poll: bounded alarm lines and events that count every change", async (t) => {
    const sim = h.sims.rack;
    const dev = sim.deviceIds()[0]!;
    const events = await h.subscribe([`${h.parent}/lab/events`]);
    const alarmLines = () =>
      h.logs().filter((l) => typeof l.msg === "string" && /^alarm (raised|changed|cleared)/.test(l.msg));
    const linesBefore = alarmLines().length;
    const changesBefore = alarmChanges;
    for (let round = 0; round < 8; round += 1) {
      const polled = h.app.store.get("lab")?.lastSuccessUtc ?? 0;
      for (let i = 0; i < OUTLETS; i += 1) {
        sim.setAlarm(dev, i, round % 2 === 0 ? { state: "alarm", severity: "critical" } : null);
      }
      await h.waitForPoll("lab", polled + 1);
    }
    const changes = alarmChanges - changesBefore;
    assert.ok(changes >= 4 * OUTLETS, `${changes} alarm changes`);
    const written = alarmLines().length - linesBefore;
    assert.ok(written <= 120, `${written} alarm lines for ${changes} changes`);
    const sent = events.messages.filter((m) => !m.payload.includes('"event_type":"folded"')).length;
    t.diagnostic(`${changes} alarm changes: ${written} alarm lines, ${sent} events`);
    assert.ok(sent <= 300, `${sent} alarm events for ${changes} changes`);
    // Once the windows end: the folded lines and events account for every change.
    await waitFor(
      () => counted(alarmLines().slice(linesBefore)) === changes,
      "every change counted in the log",
      30_000,
    );
    await waitFor(
      () =>
        events.messages.reduce((n, m) => {
          const e = JSON.parse(m.payload) as { event_type: string; count?: number };
          return n + (e.event_type === "folded" ? (e.count ?? 0) : 1);
        }, 0) === changes,
      "every change counted in the events",
      30_000,
    );
  });
});
