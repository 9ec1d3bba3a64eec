/**
 * `pdu-bridge demo`: a first look in one command. Starts a simulated OneView cluster (a master and
 * two members) and, beside it, a simulated SNMP PDU (an APC AP8858 on the SNMP simulator; `--no-snmp`
 * leaves it out), the embedded MQTT broker and the bridge with the REST API on and a freshly
 * generated API key, then prints where to look and ready-to-paste control commands.
 *
 * The configuration goes through the same loader as a real file (the key through
 * SERVICE_API_KEY), so the demo exercises the real paths, not a shortcut.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { parseArgs } from "node:util";
import { App } from "./app.js";
import { parseConfigText } from "./config/load.js";
import { createLogger, readableLines } from "./log.js";
import type { Snapshot } from "./pdu/model.js";
import { startSimulator } from "./simulator/index.js";
import type { SnmpSimulator } from "./simulator/snmp/agent.js";

export const DEMO_USAGE = `usage: pdu-bridge demo [--api-port N] [--health-port N] [--mqtt-port N] [--pdu-port N] [--no-snmp]
  defaults 8082, 8081, 1883 and a free port; a default port that is taken is replaced by a free one;
  --no-snmp: without the simulated SNMP PDU (instance rack-apc, on a free UDP port)`;

/** The demo's SNMP instance and its communities (given to the loader as SERVICE_PDU_RACK_APC_*). */
const SNMP_ID = "rack-apc";
const SNMP_COMMUNITIES = { read: "demo-read", write: "demo-write" } as const;

const DEFAULT_PORTS = { "api-port": 8082, "health-port": 8081, "mqtt-port": 1883, "pdu-port": 0 } as const;
type PortFlag = keyof typeof DEFAULT_PORTS;
const HOST = "127.0.0.1";

/** True when nothing listens on host:port (checked by listening briefly). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: HOST, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

async function choosePorts(values: Partial<Record<PortFlag, string>>): Promise<Record<PortFlag, number>> {
  const chosen = { ...DEFAULT_PORTS } as Record<PortFlag, number>;
  for (const flag of Object.keys(DEFAULT_PORTS) as PortFlag[]) {
    const given = values[flag];
    if (given !== undefined) {
      const port = Number(given);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new RangeError(`--${flag}: not a port: ${given}`);
      chosen[flag] = port;
    } else if (chosen[flag] !== 0 && !(await portIsFree(chosen[flag]))) {
      chosen[flag] = 0;
    }
  }
  return chosen;
}

export function demoConfigYaml(
  ports: Record<PortFlag, number>,
  pduPort: number,
  snmpPort: number | null = null,
): string {
  const snmp =
    snmpPort === null
      ? ""
      : `  ${SNMP_ID}:
    Driver: snmp
    Connection: { Host: ${HOST}, Port: ${snmpPort}, Timeout: 5 }
    Snmp: { Version: 2c, Profile: auto }
    PollInterval: 2
    ActionsEnabled: true
`;
  return `# The demo's configuration (see config.example.yaml for a real one)
Mqtt:
  Embedded: { Bind: ${HOST}, Port: ${ports["mqtt-port"]} }
Pdus:
  default:
    Connection: { Host: ${HOST}, Port: ${pduPort}, Timeout: 5 }
    Credentials: { Username: admin, Password: admin }
    PollInterval: 2
    ActionsEnabled: true
    Ratings: { Breakers: 16, Phases: 32 }
${snmp}Api: { Enabled: true, Bind: ${HOST}, Port: ${ports["api-port"]} }
Health: { Enabled: true, Bind: ${HOST}, Port: ${ports["health-port"]} }
Logging: { Level: warn }
`;
}

export interface DemoIo {
  out: (text: string) => void;
  /** Resolves when the demo should stop (default: SIGINT/SIGTERM). */
  until: (stop: () => Promise<void>) => Promise<number>;
}

export async function runDemo(argv: string[], io: DemoIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "api-port": { type: "string" },
      "health-port": { type: "string" },
      "mqtt-port": { type: "string" },
      "pdu-port": { type: "string" },
      "no-snmp": { type: "boolean" },
    },
    strict: true,
  });
  const ports = await choosePorts(values);
  const simulator = await startSimulator({
    host: HOST,
    port: ports["pdu-port"],
    oneview: { members: 2 },
    outlets: 8,
  });
  let snmp: SnmpSimulator | null = null;
  let app: App;
  try {
    if (values["no-snmp"] !== true) {
      const { startSnmpSimulator } = await import("./simulator/snmp/agent.js");
      snmp = await startSnmpSimulator({
        profile: "apc-rpdu2",
        host: HOST,
        port: 0,
        community: SNMP_COMMUNITIES.read,
        writeCommunity: SNMP_COMMUNITIES.write,
      });
    }
    const apiKey = randomBytes(18).toString("base64url");
    const config = await parseConfigText(
      demoConfigYaml(ports, simulator.port, snmp?.port ?? null),
      "demo (built in)",
      {
        SERVICE_API_KEY: apiKey,
        SERVICE_PDU_RACK_APC_COMMUNITY: SNMP_COMMUNITIES.read,
        SERVICE_PDU_RACK_APC_WRITE_COMMUNITY: SNMP_COMMUNITIES.write,
      },
    );
    // Readable lines among the demo's own text, not JSON (the service proper logs JSON).
    app = await App.start(config, {
      logger: createLogger({ level: config.Logging.Level, destination: readableLines(io.out) }),
    });
    io.out(
      instructions(
        app,
        simulator.url,
        simulator.deviceIds()[0] ?? "DEVICE",
        apiKey,
        config.Mqtt.ParentTopic,
        snmp,
      ),
    );
    printGroupsOnce(app, io, config.Mqtt.ParentTopic);
  } catch (error) {
    await simulator.close();
    await snmp?.close();
    throw error;
  }
  return io.until(async () => {
    await app.stop();
    await simulator.close();
    await snmp?.close();
  });
}

/** Once the first snapshot is in, prints the cluster's OneView groups with their rollups. */
function printGroupsOnce(app: App, io: DemoIo, parentTopic: string): void {
  const unsubscribe = app.bus.on("snapshot", (event) => {
    if (!event.fromPoll || event.snapshot.instanceId !== "default") return;
    unsubscribe();
    io.out(groupSummary(event.snapshot, parentTopic));
  });
}

const stat = (v: number | null): string => (v === null ? "-" : String(Math.round(v * 1000) / 1000));

/** The OneView groups of a snapshot: members and rollups (sum, and avg/min/max where reported). */
export function groupSummary(snapshot: Snapshot, parentTopic: string): string {
  const lines = [
    `\nOneView groups (rollups as the PDU reports them; MQTT: ${parentTopic}/default/groups/#):`,
  ];
  for (const g of snapshot.groups) {
    const members = g.key === "total" ? "the whole cluster" : `${g.members.length} member outlet(s)`;
    lines.push(`  group ${g.key} "${g.displayName}": ${members}`);
    for (const m of g.measurements) {
      const spread = m.avg === null ? "" : ` avg ${stat(m.avg)} min ${stat(m.min)} max ${stat(m.max)}`;
      lines.push(`    ${m.key}: sum ${stat(m.sum)} ${m.units}${spread}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

function instructions(
  app: App,
  pduUrl: string,
  deviceId: string,
  apiKey: string,
  parentTopic: string,
  snmp: SnmpSimulator | null,
): string {
  const { apiPort, healthPort, embeddedBroker } = app.endpoints;
  const api = `http://${HOST}:${apiPort ?? "?"}`;
  const broker = embeddedBroker ?? { host: HOST, port: 1883 };
  return `
pdu-bridge demo is running. Ctrl-C stops everything.

  Simulated OneView cluster  ${pduUrl}  (a master and 2 members; login admin/admin)
${
  snmp === null
    ? ""
    : `  Simulated SNMP PDU         udp ${HOST}:${snmp.port}  (APC AP8858, instance ${SNMP_ID}; communities ${SNMP_COMMUNITIES.read} / ${SNMP_COMMUNITIES.write})
`
}  Embedded MQTT broker       mqtt://${broker.host}:${broker.port}
  Web console                ${api}/ui/
  REST API docs              ${api}/docs/v1
  Readings                   ${api}/api/v1/readings
  Readiness                  http://${HOST}:${healthPort ?? "?"}/readyz
  API key (generated)        ${apiKey}

Switch the first outlet off:
  curl -sS -X POST -H 'Content-Type: application/json' -H 'X-Api-Key: ${apiKey}' -d '{"action":"off"}' ${api}/api/v1/instances/default/outlets/${deviceId}/0/control
${
  snmp === null
    ? ""
    : `
Switch the SNMP PDU's first outlet off (same API: nothing above the driver knows it is SNMP):
  curl -sS -X POST -H 'Content-Type: application/json' -H 'X-Api-Key: ${apiKey}' -d '{"action":"off"}' ${api}/api/v1/instances/${SNMP_ID}/outlets/3F1734A01234/0/control
`
}
Watch the MQTT topics (Debian: apt-get install mosquitto-clients):
  mosquitto_sub -h ${broker.host} -p ${broker.port} -t '${parentTopic}/#' -v
`;
}
