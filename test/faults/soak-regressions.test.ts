/**
 * Regressions found by the soak (bench/soak.ts), checked in seconds instead of minutes.
 *
 * The heap of a bridge polling 200 PDUs every second grew by about 50 MiB an hour: every PDU request
 * combined the poller's long-lived stop signal with its deadline through `AbortSignal.any`, and on
 * Node 20 each call leaves an entry in the long-lived signal's set of dependants that is never
 * pruned (nodejs/node#55351). The client now links the signals itself and detaches after each
 * request: nothing may stay attached to a long-lived signal, however many requests used it.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { after, before, test } from "node:test";
import { parseConfigText } from "../../src/config/load.js";
import { GeistClient } from "../../src/pdu/geist/client.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

/** What Node keeps on a signal for `AbortSignal.any` (internal; 0 when this Node has no such set). */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => String(s) === "Symbol(kDependantSignals)");
  const set = key === undefined ? undefined : (signal as unknown as Record<symbol, unknown>)[key];
  // Node's own SafeSet, which is not `instanceof Set` from here.
  const size = (set as { size?: unknown } | undefined)?.size;
  return typeof size === "number" ? size : 0;
}

let sim: Simulator;
let client: GeistClient;

before(async () => {
  sim = await startSimulator({ requestLogLimit: 0 });
  const config = await parseConfigText(
    `Pdus:\n  lab:\n    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Scheme: http, Timeout: 5 }\n` +
      "    Credentials: { Username: admin, Password: admin }\n    ActionsEnabled: true\n",
    "soak-regressions.yaml",
    {},
  );
  client = new GeistClient(config.instances[0]!);
});

after(async () => {
  await client?.close();
  await sim?.close();
});

test("500 polls and 50 writes with one long-lived signal leave nothing attached to it", async () => {
  const stop = new AbortController();
  for (let i = 0; i < 500; i++) await client.poll(stop.signal);
  const deviceId = sim.deviceIds()[0]!;
  for (let i = 0; i < 50; i++) {
    await client.controlOutlet(
      { deviceId, index: i % 8, route: null },
      i % 2 === 0 ? "off" : "on",
      stop.signal,
    );
  }
  assert.equal(getEventListeners(stop.signal, "abort").length, 0, "abort listeners left on the signal");
  assert.equal(dependants(stop.signal), 0, "AbortSignal.any dependants left on the signal");
  // The link still works: a stop aborts a request in flight.
  await sim.setFault("hang");
  const polling = client.poll(stop.signal);
  setTimeout(() => stop.abort(new Error("stopped")), 100);
  await assert.rejects(polling, /stopped/);
  await sim.setFault(null);
});

test("40 requests in flight on one signal: no MaxListenersExceededWarning, nothing left attached", async () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on("warning", onWarning);
  try {
    const stop = new AbortController();
    await Promise.all(Array.from({ length: 40 }, () => client.poll(stop.signal)));
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    assert.deepEqual(
      warnings.filter((w) => w.startsWith("MaxListenersExceededWarning")),
      [],
    );
    assert.equal(getEventListeners(stop.signal, "abort").length, 0);
  } finally {
    process.off("warning", onWarning);
  }
});
