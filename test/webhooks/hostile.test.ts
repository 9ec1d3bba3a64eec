/**
 * What a webhook receiver answers is hostile input (docs/events.md, Webhooks): a 64 MiB body, a
 * body that never ends, a redirect and an answer later than `Timeout` each cost that receiver at
 * most its `Timeout` per attempt and nothing else: the body is not kept, the redirect not followed
 * (its target hears nothing; the receiver is retried and shown failing), the late receiver is
 * retried and takes the events once it answers in time, and a well-behaved receiver beside them
 * gets every event at once.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ControlEvent } from "../../src/bus.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { WebhookReceiver } from "../../testkit/webhook-receiver.js";

const SECRET = "whsec-hostile-3a9c7e1b5d";
const NAMES = ["fine", "huge", "endless", "redirect", "late"] as const;
type Name = (typeof NAMES)[number];

const control = (index: number): ControlEvent => ({
  source: { surface: "mqtt", topic: "pdu-bridge/lab/E4A1/outlets/0/set" },
  instanceId: "lab",
  target: { kind: "outlet", deviceId: "E4A1", index },
  action: "off",
  status: 200,
  fromCore: true,
});

describe("hostile webhook receivers", { timeout: 120_000 }, () => {
  const receivers = {} as Record<Name, WebhookReceiver>;
  let target: WebhookReceiver;
  let h: AppHarness<"lab">;

  before(async () => {
    for (const name of NAMES) receivers[name] = await WebhookReceiver.start(SECRET);
    target = await WebhookReceiver.start(SECRET);
    receivers.huge.mode = "huge-body";
    receivers.endless.mode = "endless-body";
    receivers.redirect.mode = "redirect";
    receivers.redirect.redirectTo = target.url;
    receivers.late.mode = "slow";
    receivers.late.slowMs = 4000;
    const env = Object.fromEntries(NAMES.map((_, i) => [`SERVICE_WEBHOOK_${i}_SECRET`, SECRET]));
    h = await startAppHarness({
      sims: { lab: { outlets: 2 } },
      env,
      yaml: (sims) =>
        appYaml({
          pdus: [pduYaml("lab", sims.lab)],
          extra: [
            "Webhooks:",
            ...NAMES.map(
              (name) =>
                `  - { Url: ${JSON.stringify(receivers[name].url)}, AllowHttp: true, Name: ${name}, Events: [control], Timeout: 1, RetryMaxDelay: 0.2 }`,
            ),
          ].join("\n"),
        }),
    });
  });
  after(async () => {
    await h?.close();
    await Promise.allSettled([...Object.values(receivers), target].map((r) => r?.close()));
  });

  it("costs each receiver its own time only, keeps no body, follows no redirect", async () => {
    for (let i = 0; i < 3; i++) h.app.bus.emit("control", control(i));
    await waitFor(() => receivers.fine.deliveries.length === 3, "the well-behaved receiver has every event");
    await waitFor(() => receivers.huge.deliveries.length === 3, "the huge bodies' receiver has every event");
    await waitFor(
      () => receivers.endless.deliveries.length === 3,
      "the endless bodies' receiver has every event",
      30_000,
    );
    for (const name of ["fine", "huge", "endless"] as const) {
      const targets = receivers[name].deliveries.map((d) => (d.json.target as { index: number }).index);
      assert.deepEqual(targets, [0, 1, 2], `${name}: in order, once each`);
      assert.ok(receivers[name].deliveries.every((d) => d.valid));
    }
    // Each huge body was cut off: the process holds no 64 MiB answer.
    assert.ok(process.memoryUsage().rss < 1024 * 1024 * 1024);

    await waitFor(() => receivers.redirect.requests >= 3, "the redirecting receiver retried");
    assert.equal(target.requests, 0, "the redirect is not followed");
    await waitFor(() => receivers.late.requests >= 2, "the late receiver retried");
    const health = JSON.parse((await h.health.get("/health/integrations")).text) as {
      integrations: Record<string, { status: string; detail: string }>;
    };
    assert.equal(health.integrations["webhook:redirect"]?.status, "degraded");
    assert.match(health.integrations["webhook:redirect"]?.detail ?? "", /HTTP 302/);
    assert.equal(health.integrations["webhook:late"]?.status, "degraded");
    assert.match(health.integrations["webhook:late"]?.detail ?? "", /no answer within 1 s/);
    assert.equal(health.integrations["webhook:fine"]?.status, "healthy");

    // In time again: the late receiver takes the three, in order (a repeat keeps its id).
    receivers.late.slowMs = 0;
    await waitFor(() => receivers.late.unique().length === 3, "the late receiver has every event", 30_000);
    assert.deepEqual(
      receivers.late.unique().map((d) => (d.json.target as { index: number }).index),
      [0, 1, 2],
    );
    assert.equal(receivers.redirect.deliveries.length, 0);
  });
});
