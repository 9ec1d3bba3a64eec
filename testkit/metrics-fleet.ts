/**
 * The real health listener with the real BridgeMetrics over a store of `pdus` snapshots, each a
 * copy of one real poll of the project's Geist simulator (`outlets` outlets) under an id and device
 * ids of its own: the metrics bench's serving side and the scrape tests use it. No poller runs.
 */
import type { AddressInfo } from "node:net";
import { EventBus } from "../src/bus.js";
import { parseConfigText } from "../src/config/load.js";
import { buildHealthServer } from "../src/http/health/server.js";
import type { Logger } from "../src/log.js";
import { BridgeMetrics } from "../src/metrics/bridge.js";
import { metricsRoute } from "../src/metrics/endpoint.js";
import { GeistClient } from "../src/pdu/geist/client.js";
import type { Snapshot } from "../src/pdu/model.js";
import { SnapshotStore } from "../src/poller/store.js";
import { startSimulator } from "../src/simulator/index.js";
import { configYaml } from "./config-yaml.js";

export interface MetricsFleet {
  readonly metrics: BridgeMetrics;
  /** The listener's port on 127.0.0.1. */
  readonly port: number;
  close(): Promise<void>;
}

export async function startMetricsFleet(options: {
  pdus: number;
  outlets: number;
  logger: Logger;
}): Promise<MetricsFleet> {
  const { logger } = options;
  const sim = await startSimulator({ outlets: options.outlets, requestLogLimit: 0 });
  const ids = Array.from({ length: options.pdus }, (_, i) => `pdu-${String(i).padStart(4, "0")}`);
  const yaml = configYaml({
    Mqtt: { Connection: { Host: "127.0.0.1" } },
    Health: { Bind: "127.0.0.1", Port: 0 },
    Pdus: Object.fromEntries(
      ids.map((id) => [id, { Connection: { Host: "127.0.0.1", Port: sim.port, Scheme: "http" } }]),
    ),
  });
  const config = await parseConfigText(yaml, "metrics-fleet.yaml", {});
  const client = new GeistClient(config.instances[0]!, { logger });
  const polled = await client.poll(new AbortController().signal);
  await client.close();
  await sim.close();
  const bus = new EventBus({ logger });
  const store = new SnapshotStore(ids, { bus });
  ids.forEach((id, i) => {
    const snapshot: Snapshot = {
      ...polled,
      instanceId: id,
      devices: polled.devices.map((d) => ({
        ...d,
        id: `${d.id.slice(0, 12)}${i.toString(16).padStart(4, "0")}`,
      })),
    };
    store.recordSuccess(id, snapshot);
  });
  const metrics = new BridgeMetrics({ store, bus, skippedPolls: () => 0, mqtt: () => null });
  const app = await buildHealthServer({
    config,
    store,
    bus,
    logger,
    startedAt: Date.now(),
    metrics,
    metricsRoute: metricsRoute(metrics),
    mqttStatus: () => ({
      connected: true,
      broker: "mqtt://127.0.0.1:1883",
      embedded: false,
      lastError: null,
      since: 0,
    }),
    homeAssistantStatus: () => ({ enabled: false, discoveryTopic: "homeassistant", lastDiscoveryUtc: null }),
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return {
    metrics,
    port: (app.server.address() as AddressInfo).port,
    close: () => app.close(),
  };
}
