/**
 * A bench's view from outside the bridge: a fresh MQTT subscriber on the bench's broker, for as
 * long as the bench waits on what it sees (retained messages first).
 */
import { connect } from "mqtt";
import type { Broker } from "./broker.js";
import { sleep } from "./child.js";

/**
 * A fresh subscriber of `filter` until `done()` answers true or `timeoutMs` passes; `onMessage`
 * sees every message. `name` goes into its client id.
 */
export async function subscribeUntil(
  broker: Broker,
  name: string,
  filter: string,
  onMessage: (topic: string, payload: Buffer) => void,
  done: () => boolean,
  timeoutMs: number,
): Promise<void> {
  const client = connect(broker.url, { clientId: `bench-${name}-${process.pid}`, clean: true });
  client.on("message", onMessage);
  try {
    await new Promise<void>((ok, fail) => {
      client.once("connect", () => ok());
      client.once("error", fail);
    });
    await client.subscribeAsync(filter);
    const deadline = Date.now() + timeoutMs;
    while (!done() && Date.now() < deadline) await sleep(200);
  } finally {
    await client.endAsync(true);
  }
}

/**
 * Waits until Home Assistant discovery is out: no discovery config arriving for `quietMs`, and
 * `enough()` (default: at once). `onConfig` sees each config. A start's discovery is a cost of the
 * start, not of a poll: a bench's windows begin after it.
 */
export async function discoveryQuiet(
  broker: Broker,
  quietMs: number,
  timeoutMs: number,
  onConfig: (topic: string, payload: Buffer) => void = () => undefined,
  enough: () => boolean = () => true,
): Promise<void> {
  let last = Date.now();
  await subscribeUntil(
    broker,
    "discovery",
    "homeassistant/#",
    (topic, payload) => {
      last = Date.now();
      onConfig(topic, payload);
    },
    () => enough() && Date.now() - last >= quietMs,
    timeoutMs,
  );
}
