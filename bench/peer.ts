/**
 * Scenario `peer`: what a user would otherwise wire by hand. A headless Node-RED (devDependency
 * `node-red`, 4.x: 5.x needs Node 22) runs a generated flow against the same simulators and broker:
 *
 *   inject (one per PDU, every N s, first fires spread over N s) → http request (GET, parsed JSON,
 *   keep-alive) → function "split measurements" (one message per outlet/entity measurement) →
 *   mqtt out (QoS 0)
 *
 * and the bridge polls the same 100 PDUs. Both are measured like the fleet scenario (CPU per poll,
 * RSS, lateness, broker traffic) and reported side by side.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../testkit/repo.js";
import { bridgeProcess, writeBridgeConfig } from "./lib/bridge.js";
import { startBroker, type Broker } from "./lib/broker.js";
import { DIST, IpcChild, ROOT, spawnNode, stopChild } from "./lib/child.js";
import { measurePoller, type BenchContext, type PollerRun, type ScenarioResult } from "./lib/measure.js";
import { row, type Row } from "./lib/report.js";
import { pduId, startSimFleet } from "./lib/sim-fleet.js";
import { ratio } from "./lib/stats.js";

const NODE_RED = join(ROOT, "node_modules/node-red/red.js");

/** The function node of the flow: one MQTT message per measurement, the value as the PDU sent it. */
const SPLIT = `const out = [];
const dev = (msg.payload && msg.payload.data && msg.payload.data.dev) || {};
for (const [deviceId, d] of Object.entries(dev)) {
  for (const [index, o] of Object.entries(d.outlet || {}))
    for (const m of Object.values(o.measurement || {}))
      out.push({ topic: "nodered/" + msg.pdu + "/" + deviceId + "/outlets/" + index + "/" + m.type, payload: m.value });
  for (const [key, e] of Object.entries(d.entity || {}))
    for (const m of Object.values(e.measurement || {}))
      out.push({ topic: "nodered/" + msg.pdu + "/" + deviceId + "/entity/" + key + "/" + m.type, payload: m.value });
}
return [out];`;

export function nodeRedFlow(ports: readonly number[], broker: Broker, intervalS: number): unknown[] {
  const tab = "pdus";
  const injects = ports.map((port, i) => ({
    id: `inject-${i}`,
    type: "inject",
    z: tab,
    name: pduId(i),
    props: [
      { p: "url", v: `http://127.0.0.1:${port}/api`, vt: "str" },
      { p: "pdu", v: pduId(i), vt: "str" },
    ],
    repeat: String(intervalS),
    crontab: "",
    once: true,
    // Spread the first polls over one interval, as the bridge does (seconds; Node-RED's minimum is 0.1).
    onceDelay: String(Math.max(0.1, (intervalS * i) / ports.length)),
    topic: "",
    x: 100,
    y: 40 + i * 40,
    wires: [["http"]],
  }));
  return [
    { id: tab, type: "tab", label: "PDUs", disabled: false, info: "" },
    {
      id: "broker",
      type: "mqtt-broker",
      name: "mosquitto",
      broker: broker.host,
      port: String(broker.port),
      clientid: "",
      autoConnect: true,
      usetls: false,
      protocolVersion: "4",
      keepalive: "60",
      cleansession: true,
      autoUnsubscribe: true,
      birthTopic: "",
      closeTopic: "",
      willTopic: "",
    },
    ...injects,
    {
      id: "http",
      type: "http request",
      z: tab,
      name: "GET /api",
      method: "GET",
      ret: "obj",
      paytoqs: "ignore",
      url: "",
      tls: "",
      persist: true,
      proxy: "",
      insecureHTTPParser: false,
      authType: "",
      senderr: false,
      headers: [],
      x: 300,
      y: 40,
      wires: [["split"]],
    },
    {
      id: "split",
      type: "function",
      z: tab,
      name: "split measurements",
      func: SPLIT,
      outputs: 1,
      timeout: 0,
      noerr: 0,
      initialize: "",
      finalize: "",
      libs: [],
      x: 500,
      y: 40,
      wires: [["mqtt"]],
    },
    {
      id: "mqtt",
      type: "mqtt out",
      z: tab,
      name: "",
      topic: "",
      qos: "0",
      retain: "false",
      broker: "broker",
      x: 700,
      y: 40,
      wires: [],
    },
  ];
}

export async function runPeer(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = ctx.quick ? 10 : 100;
  const intervalS = ctx.quick ? 2 : 10;
  const windowSeconds = ctx.quick ? 8 : 60;
  const intervalMs = intervalS * 1000;
  ctx.log(`peer: Node-RED flow vs pdu-bridge, ${pdus} PDUs every ${intervalS} s`);

  const broker = await startBroker(ctx.tools.mosquitto);
  const fleet = await startSimFleet({ pdus, processes: ctx.quick ? 1 : 2, outlets: 24 });
  const counter = new IpcChild(join(DIST, "bench/lib/mqtt-counter.js"), [broker.url]);
  await counter.ready();
  const common = { fleet, pdus, broker, counter, intervalMs, windowSeconds, warmupPolls: 3, log: ctx.log };
  try {
    let nodeRed: PollerRun | null = null;
    let nodeRedProblem: string | null = null;
    if (!existsSync(NODE_RED)) {
      nodeRedProblem = "node-red is not installed (npm install --save-dev node-red@4)";
    } else {
      const userDir = join(ctx.workDir, "node-red");
      mkdirSync(userDir, { recursive: true });
      const flowFile = join(userDir, "flows.json");
      writeFileSync(flowFile, JSON.stringify(nodeRedFlow(fleet.ports, broker, intervalS), null, 1));
      const settings = join(userDir, "settings.js");
      const uiPort = await freePort();
      writeFileSync(
        settings,
        `module.exports = ${JSON.stringify(
          {
            uiPort,
            uiHost: "127.0.0.1",
            flowFile,
            flowFilePretty: false,
            credentialSecret: false,
            disableEditor: true,
            httpNodeRoot: false,
            logging: { console: { level: "info", metrics: false, audit: false } },
            telemetry: { enabled: false },
            externalModules: { autoInstall: false, palette: { allowInstall: false } },
            diagnostics: { enabled: false },
          },
          null,
          1,
        )};\n`,
      );
      try {
        nodeRed = await measurePoller({
          ...common,
          name: "Node-RED flow",
          prefixes: ["nodered"],
          start: async () => {
            const child = spawnNode(NODE_RED, ["--settings", settings, "--userDir", userDir], {
              logFile: join(ctx.workDir, "node-red.log"),
            });
            await child.waitForLog("Started flows", 60_000);
            return { pid: child.pid, stop: () => stopChild(child.child) };
          },
        });
      } catch (error) {
        nodeRedProblem = `Node-RED could not be run: ${error instanceof Error ? error.message : String(error)}`;
        ctx.log(`  ${nodeRedProblem}`);
      }
    }

    const configFile = writeBridgeConfig({
      dir: ctx.workDir,
      name: "peer-bridge",
      ports: fleet.ports,
      broker,
      pollIntervalS: intervalS,
    });
    const bridge = await measurePoller({
      ...common,
      name: "pdu-bridge",
      prefixes: ["pdu-bridge", "homeassistant"],
      settlePrefix: "homeassistant",
      start: () => bridgeProcess(configFile, join(ctx.workDir, "peer-bridge.log"), ctx.bridgeNodeArgs),
    });

    const label = "Node-RED";
    const side = (metric: string, unit: string, pick: (r: PollerRun) => number | null): Row =>
      row({
        scenario: "peer",
        metric,
        unit,
        target: "info",
        measured: pick(bridge),
        baseline: nodeRed === null ? null : pick(nodeRed),
        baselineLabel: label,
        ratio: nodeRed === null ? null : ratio(pick(bridge), pick(nodeRed)),
        pass: null,
        ...(nodeRedProblem === null ? {} : { note: nodeRedProblem }),
      });
    return {
      rows: [
        side("CPU per poll", "ms", (r) => r.cpuMsPerPoll),
        side("RSS peak (VmHWM)", "MB", (r) => r.rssHwmMb),
        side("poll lateness p99", "ms", (r) => r.latenessP99Ms),
        side("MQTT messages", "/s", (r) => r.ownMessagesPerSecond),
      ],
      details: { pdus, intervalS, windowSeconds, bridge, nodeRed, nodeRedProblem },
      notes: [
        nodeRedProblem === null
          ? `peer: baseline = Node-RED ${nodeRedVersion()} headless, flow inject → http request → function (split measurements) → mqtt out, one inject per PDU; measured just before the bridge on the same ${pdus} PDUs.`
          : `peer: ${nodeRedProblem}; only the bridge was measured.`,
      ],
    };
  } finally {
    await counter.request("close").catch(() => undefined);
    await counter.stop();
    await fleet.close();
    await broker.close();
  }
}

function nodeRedVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(ROOT, "node_modules/node-red/package.json"), "utf8")) as {
      version: string;
    };
    return pkg.version;
  } catch {
    return "?";
  }
}
