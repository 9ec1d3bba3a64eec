/**
 * Webhooks in one process (docs/events.md, Webhooks): a receiver down while 500 alarm events
 * happen, with a bridge restart in the middle and `State.Dir` set, gets every event once, in
 * order, under the ids the events had, each signature valid, after it comes back (first answering
 * 500 for a while); another receiver keeps taking events meanwhile; a restart tells nothing twice;
 * metrics and /health/integrations show each receiver; nothing of a receiver's answer, its URL's
 * token or a secret reaches the logs.
 *
 * The contract's outage is 10 minutes with waits up to 5 minutes; here `RetryMaxDelay` is 0.2 s so
 * that the same path runs in seconds (bench/webhooks.ts runs the full outage).
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ActiveAlarm, AlarmChange } from "../../src/pdu/model.js";
import { alarmEvent } from "../../src/webhooks/events.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { WebhookReceiver } from "../../testkit/webhook-receiver.js";

const SECRET_A = "whsec-a-5f1c0e9b7d2a4c68";
const SECRET_B = "whsec-b-0b8e2d7c1a9f3e54";
const EVENTS = 500;
const BASE = Date.parse("2026-11-28T10:00:00Z");

/** The k-th of the 500 changes: alarm k/2 raised (k even) or cleared (k odd). */
function change(k: number): AlarmChange {
  const n = Math.floor(k / 2);
  const alarm: ActiveAlarm = {
    id: `E4A1/outlet/${n}/pdu`,
    deviceId: "E4A1",
    target: { kind: "outlet", index: n },
    name: `Outlet ${n}`,
    source: "pdu",
    severity: "warning",
    percent: null,
    reported: "alarm",
    since: BASE + n * 1000,
  };
  return { change: k % 2 === 0 ? "raised" : "cleared", alarm, at: BASE + n * 1000 + (k % 2) * 500 };
}

describe("webhooks through a receiver's outage and a bridge restart", { timeout: 180_000 }, () => {
  let a: WebhookReceiver;
  let b: WebhookReceiver;
  let dir: string;
  let h: AppHarness<"lab"> | null = null;
  const env = { SERVICE_WEBHOOK_0_SECRET: SECRET_A, SERVICE_WEBHOOK_1_SECRET: SECRET_B };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "pdu-webhooks-"));
    a = await WebhookReceiver.start(SECRET_A, { https: true });
    b = await WebhookReceiver.start(SECRET_B);
    await writeFile(join(dir, "ca.pem"), a.tls?.cert ?? "");
  });
  after(async () => {
    await h?.close();
    await a?.close();
    await b?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const start = () =>
    startAppHarness({
      sims: { lab: { outlets: 2 } },
      env,
      waitForFirstPolls: true,
      yaml: (sims) =>
        appYaml({
          pdus: [pduYaml("lab", sims.lab, { pollInterval: 1 })],
          extra: [
            "Metrics: { Enabled: true }",
            `State: { Dir: ${JSON.stringify(join(dir, "state"))} }`,
            "Webhooks:",
            `  - { Url: ${JSON.stringify(a.url)}, Events: [alarm], Timeout: 2, RetryMaxDelay: 0.2, CaFile: ${JSON.stringify(join(dir, "ca.pem"))} }`,
            `  - { Url: ${JSON.stringify(b.url)}, AllowHttp: true, Name: ops, Events: [availability, control] }`,
          ].join("\n"),
        }),
    });
  const emit = (app: AppHarness<"lab">, from: number, to: number) => {
    for (let k = from; k < to; k++) app.app.bus.emit("alarms", { instanceId: "lab", changes: [change(k)] });
  };

  it("delivers every event once, in order, signed, after the outage and across the restart", async () => {
    h = await start();
    await waitFor(
      () => b.deliveries.some((d) => d.json.type === "instance.available"),
      "lab available at ops",
    );
    await a.down();
    emit(h, 0, EVENTS / 2);
    // The file holds the undelivered events before the bridge stops (and it writes them once more on stop).
    await waitFor(async () => {
      const text = await readFile(join(dir, "state", "webhooks.json"), "utf8").catch(() => "");
      return text.includes(change(EVENTS / 2 - 1).alarm.id);
    }, "the first half kept in State.Dir");
    await h.close();
    h = null;
    assert.equal(a.deliveries.length, 0);

    h = await start();
    emit(h, EVENTS / 2, EVENTS);
    // Back, answering 500 for a while: retried with backoff, in order.
    a.mode = "error";
    await a.listen();
    const errorsFrom = a.requests;
    await waitFor(() => a.requests >= errorsFrom + 4, "a few attempts answered 500");
    // The other receiver takes events meanwhile: a control outcome reaches it at once.
    h.app.bus.emit("control", {
      source: { surface: "rest", client: "127.0.0.1" },
      instanceId: "lab",
      target: { kind: "outlet", deviceId: "E4A1", index: 0 },
      action: "on",
      status: 200,
      fromCore: true,
    });
    await waitFor(
      () => b.deliveries.some((d) => d.json.type === "control.outcome"),
      "the control outcome at ops",
    );
    assert.equal(a.deliveries.length, 0);
    a.mode = "ok";
    await waitFor(() => a.deliveries.length >= EVENTS, "every event at the receiver", 60_000);

    const expected = Array.from({ length: EVENTS }, (_, k) => alarmEvent("lab", change(k)));
    assert.equal(a.deliveries.length, EVENTS, "no event delivered twice");
    assert.deepEqual(
      a.deliveries.map((d) => d.id),
      expected.map((e) => e.id),
      "in order, under the ids the events had",
    );
    assert.ok(
      a.deliveries.every((d) => d.valid),
      "every signature valid",
    );
    assert.deepEqual(
      a.deliveries.slice(0, 2).map((d) => [d.json.type, d.json.instance]),
      [
        ["alarm.raised", "lab"],
        ["alarm.cleared", "lab"],
      ],
    );
    // The restart told the instance's availability again to nobody: ops heard it once.
    assert.equal(b.deliveries.filter((d) => d.json.type === "instance.available").length, 1);
    assert.ok(b.deliveries.every((d) => d.valid));
  });

  it("counts deliveries per receiver and shows each receiver's state", async () => {
    assert.ok(h !== null);
    const metrics = (await h.health.get("/metrics")).text;
    assert.match(metrics, /pdu_webhook_deliveries_total\{receiver="0",outcome="delivered"\} 500\n/);
    assert.match(metrics, /pdu_webhook_deliveries_total\{receiver="0",outcome="failed"\} [1-9]\d*\n/);
    assert.match(metrics, /pdu_webhook_queue_depth\{receiver="0"\} 0\n/);
    assert.match(metrics, /pdu_webhook_queue_depth\{receiver="ops"\} 0\n/);
    assert.doesNotMatch(metrics, /t0k3n|hooks\/pdu/);
    const health = JSON.parse((await h.health.get("/health/integrations")).text) as {
      integrations: Record<string, { status: string; detail: string }>;
    };
    assert.equal(health.integrations["webhook:0"]?.status, "healthy");
    assert.match(
      health.integrations["webhook:ops"]?.detail ?? "",
      /^127\.0\.0\.1:\d+: idle; 0 queued, 1 delivered/,
    );
    assert.doesNotMatch(JSON.stringify(health), /t0k3n|hooks\/pdu/);
  });

  it("logs the outage once, and nothing of the answers, the URL's token or the secrets", () => {
    assert.ok(h !== null);
    const text = h.logText();
    // Down when the restarted bridge began (the connection refused), then answering 500: one line.
    assert.match(text, /webhook receiver 0 does not take events \(connect ECONNREFUSED/);
    assert.equal(text.split("does not take events").length - 1, 1);
    assert.match(text, /webhook receiver 0 takes events again/);
    for (const secret of ["receiver-error-body-must-not-be-logged", "t0k3n", SECRET_A, SECRET_B])
      assert.ok(!text.includes(secret), `${secret} in the logs`);
  });
});
