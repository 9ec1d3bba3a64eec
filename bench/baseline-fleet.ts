/**
 * The naive floor of the fleet scenario: what the bridge does at its simplest, with nothing else.
 * Every interval, for each PDU: GET /api with undici, JSON.parse, and publish every measurement
 * (outlets and entities, the value string as the PDU sent it) to the broker with mqtt.js, QoS 0.
 * No model, no change detection, no discovery, no status topics, no error handling beyond a count.
 *
 * Run: `node dist/bench/baseline-fleet.js <json file>` with `{ports, broker, intervalMs}`. First
 * polls are spread over the interval (as the bridge does); prints `ready` once connected.
 */
import { readFileSync } from "node:fs";
import { connectAsync } from "mqtt";
import { request } from "undici";

interface Settings {
  readonly ports: readonly number[];
  readonly broker: string;
  readonly intervalMs: number;
}

interface Measurement {
  type: string;
  value: string;
}
interface Tree {
  data: {
    dev: Record<
      string,
      {
        outlet?: Record<string, { measurement?: Record<string, Measurement> }>;
        entity?: Record<string, { measurement?: Record<string, Measurement> }>;
      }
    >;
  };
}

const settings = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Settings;
const client = await connectAsync(settings.broker, {
  clientId: `bench-baseline-${process.pid}`,
  clean: true,
});
let errors = 0;

async function poll(i: number, port: number): Promise<void> {
  const { body } = await request(`http://127.0.0.1:${port}/api`);
  const tree = JSON.parse(await body.text()) as Tree;
  const id = `pdu-${String(i).padStart(4, "0")}`;
  for (const [deviceId, device] of Object.entries(tree.data.dev)) {
    for (const [index, outlet] of Object.entries(device.outlet ?? {})) {
      for (const m of Object.values(outlet.measurement ?? {})) {
        client.publish(`baseline/${id}/${deviceId}/outlets/${index}/${m.type}`, m.value, { qos: 0 });
      }
    }
    for (const [key, entity] of Object.entries(device.entity ?? {})) {
      for (const m of Object.values(entity.measurement ?? {})) {
        client.publish(`baseline/${id}/${deviceId}/entity/${key}/${m.type}`, m.value, { qos: 0 });
      }
    }
  }
}

settings.ports.forEach((port, i) => {
  const tick = () => {
    poll(i, port).catch((error: unknown) => {
      if (errors++ < 5) process.stderr.write(`baseline: poll ${i} failed: ${String(error)}\n`);
    });
  };
  setTimeout(
    () => {
      tick();
      setInterval(tick, settings.intervalMs);
    },
    Math.floor((settings.intervalMs * i) / settings.ports.length),
  );
});

process.on("SIGTERM", () => {
  void client.endAsync().finally(() => process.exit(0));
});
process.stdout.write("ready\n");
