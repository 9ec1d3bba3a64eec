/**
 * Scenario `webhooks` (docs/events.md, Webhooks; docs/performance.md): webhook throughput per
 * receiver, seen from the receivers, with the bridge as a child process.
 *
 * 1. Drain: two receivers (one answering at once, one taking 20 ms per request) are down while N
 *    control outcomes happen (REST commands to a simulated PDU, each one a `control.outcome`
 *    event); they come back and each one's events/s from its first to its last delivery is
 *    measured, against the same receiver's rate when this process POSTs the same bodies to it one
 *    at a time (the baseline: what one ordered sender can do at all). Every event must arrive once,
 *    in order, signed.
 * 2. The contract's outage, with the contract's defaults (RetryMaxDelay 300 s): a receiver down
 *    for 10 minutes while the same 1,000 events happen (--quick: 5 s, 200 events); measured: the time from
 *    its return until the last event arrives (at most one wait of the backoff, ≤ 5 min, plus the
 *    drain), and that every event arrived once, in order.
 */
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { Client, request } from "undici";
import { freePort } from "../testkit/repo.js";
import { WebhookReceiver } from "../testkit/webhook-receiver.js";
import { startBridge, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker } from "./lib/broker.js";
import { sleep, stopChild } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { row, type Row } from "./lib/report.js";
import { pduId, startSimFleet } from "./lib/sim-fleet.js";

const API_KEY = "bench-api-key-0123456789";
const SECRET = "bench-webhook-secret-5e1d";

interface Sizes {
  /** Control outcomes while the receivers are down (at least the contract's 500 in the full run). */
  readonly drainEvents: number;
  readonly outageS: number;
}

export async function runWebhooks(ctx: BenchContext): Promise<ScenarioResult> {
  const sizes: Sizes = ctx.quick ? { drainEvents: 200, outageS: 5 } : { drainEvents: 1000, outageS: 600 };
  ctx.log(
    `webhooks: ${sizes.drainEvents} events while the receivers are down; two drain at once, one after an outage of ${sizes.outageS} s`,
  );
  const broker = await startBroker(ctx.tools.mosquitto);
  const fleet = await startSimFleet({ pdus: 1, processes: 1, outlets: 24 });
  const fast = await WebhookReceiver.start(SECRET);
  const slow = await WebhookReceiver.start(SECRET);
  const outage = await WebhookReceiver.start(SECRET);
  slow.mode = "slow";
  slow.slowMs = 20;
  const apiPort = await freePort();
  const configFile = writeBridgeConfig({
    dir: ctx.workDir,
    name: "webhooks-bridge",
    ports: fleet.ports,
    broker,
    pollIntervalS: 10,
    api: { port: apiPort, apiKey: API_KEY },
    actions: true,
  });
  appendFileSync(
    configFile,
    [
      "Webhooks:",
      `  - { Url: ${JSON.stringify(fast.url)}, AllowHttp: true, Name: fast, Events: [control], RetryMaxDelay: 1 }`,
      `  - { Url: ${JSON.stringify(slow.url)}, AllowHttp: true, Name: slow, Events: [control], RetryMaxDelay: 1 }`,
      // The contract's defaults: waits from 1 s doubling to 5 minutes.
      `  - { Url: ${JSON.stringify(outage.url)}, AllowHttp: true, Name: outage, Events: [control] }`,
      "",
    ].join("\n"),
  );
  const env = Object.fromEntries([0, 1, 2].map((i) => [`SERVICE_WEBHOOK_${i}_SECRET`, SECRET]));
  const api = new Client(`http://127.0.0.1:${apiPort}`, { pipelining: 1 });
  const bridge = await startBridge({ configFile, logFile: join(ctx.workDir, "webhooks-bridge.log"), env });
  const rows: Row[] = [];
  const details: Record<string, unknown> = { sizes };
  try {
    const command = commander(api, pduId(0));
    await command(0); // the first poll done, the device known
    // 1. Drain: both receivers down while the events happen, then back.
    await fast.down();
    await slow.down();
    await outage.down();
    const outageFrom = Date.now();
    for (let i = 0; i < sizes.drainEvents; i++) await command(i);
    const back = Date.now();
    await fast.listen();
    await slow.listen();
    for (const [name, receiver] of [
      ["fast", fast],
      ["slow", slow],
    ] as const) {
      await waitUntil(() => receiver.deliveries.length >= sizes.drainEvents + 1, 300_000);
      const measured = drainRate(receiver, back);
      const baseline = await directRate(
        receiver,
        receiver.deliveries.slice(1, 201).map((d) => d.body),
      );
      const check = verify(receiver, sizes.drainEvents + 1);
      details[name] = { measured, baseline, ...check };
      rows.push(
        row({
          scenario: "webhooks",
          metric: `drain throughput, receiver ${name}`,
          unit: "events/s",
          target: "≥ 0.5× baseline",
          measured,
          baseline,
          ratio: measured / baseline,
          pass: measured / baseline >= 0.5 && check.ok,
          baselineLabel: "one ordered sender in the bench process",
          note: check.ok ? "every event once, in order, signed" : check.problem,
        }),
      );
    }
    // 2. The contract's outage: the third receiver stays down for the whole outage.
    await sleep(Math.max(0, outageFrom + sizes.outageS * 1000 - Date.now()));
    const returned = Date.now();
    await outage.listen();
    const expected = sizes.drainEvents + 1;
    await waitUntil(() => outage.deliveries.length >= expected, 420_000);
    const recovery = (outage.deliveries.at(-1)!.at - returned) / 1000;
    const check = verify(outage, expected);
    details.outage = { recoveryS: recovery, ...check };
    rows.push(
      row({
        scenario: "webhooks",
        metric: `every event after a ${sizes.outageS} s outage (backoff cap 300 s)`,
        unit: "s",
        target: "≤ 330 s",
        measured: recovery,
        baseline: null,
        ratio: null,
        pass: recovery <= 330 && check.ok,
        note: check.ok ? `${expected} events once, in order, signed` : check.problem,
      }),
    );
  } finally {
    await api.close();
    await stopChild(bridge.child);
    await Promise.allSettled([fast.close(), slow.close(), outage.close()]);
    await fleet.close();
    await broker.close();
  }
  return { rows, details };
}

/** Switches outlet i % 24 on, through REST (one control outcome each). */
function commander(api: Client, id: string): (i: number) => Promise<void> {
  let device: string | null = null;
  return async (i) => {
    for (let tries = 0; device === null && tries < 300; tries++) {
      const res = await api.request({ path: `/api/v1/readings?instance=${id}`, method: "GET" });
      const readings = (await res.body.json()) as { deviceId: string }[];
      device = readings[0]?.deviceId ?? null;
      if (device === null) await sleep(100);
    }
    if (device === null) throw new Error("webhooks bench: the bridge never polled the PDU");
    const answer = await api.request({
      path: `/api/v1/instances/${id}/outlets/${device}/${i % 24}/control`,
      method: "POST",
      headers: { "x-api-key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify({ action: i % 2 === 0 ? "on" : "off" }),
    });
    await answer.body.dump();
  };
}

/** Events/s from the first delivery after `since` to the last. */
function drainRate(receiver: WebhookReceiver, since: number): number {
  const after = receiver.deliveries.filter((d) => d.at >= since);
  const span = (after.at(-1)!.at - after[0]!.at) / 1000;
  return span > 0 ? (after.length - 1) / span : after.length;
}

/** The receiver's rate when one sender here POSTs `bodies` to it, one at a time. */
async function directRate(receiver: WebhookReceiver, bodies: readonly string[]): Promise<number> {
  const before = receiver.deliveries.length;
  const started = performance.now();
  for (const body of bodies) {
    const answer = await request(receiver.url, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
    await answer.body.dump();
  }
  const seconds = (performance.now() - started) / 1000;
  receiver.deliveries.splice(before);
  return bodies.length / seconds;
}

function verify(receiver: WebhookReceiver, expected: number): { ok: boolean; problem?: string } {
  const ids = receiver.deliveries.map((d) => d.id);
  if (new Set(ids).size !== ids.length) return { ok: false, problem: "an event arrived twice" };
  if (ids.length !== expected) return { ok: false, problem: `${ids.length} events of ${expected}` };
  if (!receiver.deliveries.every((d) => d.valid))
    return { ok: false, problem: "a signature did not check out" };
  const times = receiver.deliveries.map((d) => Date.parse(String(d.json.time)));
  if (times.some((t, i) => i > 0 && t < times[i - 1]!)) return { ok: false, problem: "out of order" };
  return { ok: true };
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error("webhooks bench: the receivers did not get every event in time");
    await sleep(100);
  }
}
