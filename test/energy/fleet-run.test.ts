/**
 * A fleet run of the real command line (`node dist/src/main.js`) against PDUs of both kinds: two
 * Geist simulators and two SNMP simulators (an Eaton ePDU, whose outlet counter is an Unsigned32 of
 * Wh, and a Raritan PX2), a real mosquitto, `State.Dir` in a temporary directory, a real Prometheus
 * scraping the bridge every second, and assets with tenants on the run's outlets. Along the way, at
 * fixed fractions of the run: resetStats through REST and through MQTT, a reset at the PDU, a unit
 * replaced by one with another serial, the Eaton counter wrapping through 2^32 (set close to it
 * before the start), and two restarts of the bridge.
 *
 * Everything is checked from outside the bridge's process: every `energyLifetime` value MQTT
 * carries (outlets and entities) never decreases at its place; at the end, with the simulators'
 * clocks paused and their values polled, each outlet's last published counter is the simulator's
 * ground truth within one poll interval's energy per event on it (a reset loses what was drawn
 * between the last reading and the reset) and the counter's 1 Wh rounding; and the report of
 * `GET /api/v1/energy` over the run, from Prometheus, equals the counters' increase within one
 * scrape interval's energy at each end, per outlet and per tenant, in JSON and CSV.
 *
 * The run lasts PDU_BRIDGE_ENERGY_RUN_SECONDS (default 75; docs/energy.md records a 600 s run).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { childEnv, CliProcess, tempDir } from "../../testkit/cli-process.js";
import { Client } from "../../testkit/http-harness.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { PausableClock } from "../../testkit/pausable-clock.js";
import { Recorder, type Received } from "../../testkit/mqtt-client.js";
import { prometheusUnavailable, Prometheus } from "../../testkit/prometheus.js";
import { freePort } from "../../testkit/repo.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const RUN_S = Number(process.env.PDU_BRIDGE_ENERGY_RUN_SECONDS ?? "75");
if (!Number.isFinite(RUN_S) || RUN_S < 45) throw new Error("PDU_BRIDGE_ENERGY_RUN_SECONDS: 45 or more");
const unavailable = await prometheusUnavailable();
const KEY = "energy-fleet-run-key-0123456789abc";
const PARENT = "pdu-bridge";
const LIFETIME = "/measurements/energyLifetime";
const WRAP = 2 ** 32;
/** Every poll interval and Prometheus's scrape interval (s). */
const POLL_S = 1;
/** The most an outlet of these simulators draws (W): a poll interval's energy is bounded by it. */
const MAX_OUTLET_W = 4000;
/** The Eaton simulator's two devices (a chain), as its unit reports their serials. */
const EATON = ["G206N12345", "G206N12346"] as const;
/** The Eaton outlet that wraps (1-based in the unit: the first device's outlet WRAPPING - 1). */
const WRAPPING = 3;

/** One outlet of the run: where it is, its ground truth and the PDU's counter now (Wh). */
interface Place {
  readonly instance: string;
  readonly outlet: number;
  truthWh(): number;
  counterWh(): number;
  /** The device id it has now (a replaced unit: the new one). */
  device(): string;
}

describe(
  "a fleet run with every event along the way",
  { skip: unavailable, timeout: (RUN_S + 240) * 1000 },
  () => {
    const clock = new PausableClock();
    let broker: Mosquitto;
    let prometheus: Prometheus;
    let dir: { path: string; write(name: string, text: string): Promise<string>; remove(): Promise<void> };
    let configFile: string;
    let bridge: CliProcess | null = null;
    const exited: CliProcess[] = [];
    let api: Client;
    let recorder: Recorder;
    const geist = new Map<string, Simulator>();
    const snmp = new Map<string, SnmpSimulator>();
    const places: Place[] = [];
    /** A replaced unit's device id → the id of the unit it replaced (the same place). */
    const placeOf = new Map<string, string>();
    /** Events that lost energy, per `instance/outlet` (each at most one poll interval's). */
    const losses = new Map<string, number>();
    /** The Wh between the Eaton outlet's counter and its ground truth, set before the start. */
    let wrapOffsetWh = 0;
    let from = 0;
    let to = 0;
    let healthPort = 0;
    /** The SNMP instances' device ids, as the bridge publishes them. */
    const snmpDevices = new Map<string, string>();
    const deviceOf = (id: string): string => snmpDevices.get(id) ?? "";

    const lost = (instance: string, outlet: number) =>
      losses.set(`${instance}/${outlet}`, (losses.get(`${instance}/${outlet}`) ?? 0) + 1);
    /** A place's key: `instance/outlet`, with the device where the instance has two. */
    const keyOf = (p: Place) =>
      p.instance === "ea" ? `ea/${p.device()}/${p.outlet}` : `${p.instance}/${p.outlet}`;
    const geistDevice = (id: string) => geist.get(id)!.deviceIds()[0]!;

    async function startBridge(): Promise<void> {
      bridge = CliProcess.spawn(
        ["--config", configFile],
        childEnv({ SERVICE_PDU_EA_COMMUNITY: "lab-read", SERVICE_PDU_RX_COMMUNITY: "lab-read" }),
        "pdu-bridge fleet run",
      );
      const ports = await bridge.started(60_000);
      assert.ok(ports.apiPort !== null);
      api = new Client(ports.apiPort);
    }

    async function restartBridge(): Promise<void> {
      const old = bridge!;
      old.signal("SIGTERM");
      const exit = await old.waitForExit(30_000);
      assert.equal(exit.code, 0, old.output);
      exited.push(old);
      await startBridge();
    }

    /** The last message of a topic at or before `at` (ms). */
    const lastOf = (topic: string, at = Infinity): Received | undefined =>
      recorder.messages.filter((m) => m.topic === topic && m.at <= at && m.payload !== "").at(-1);
    const topicOf = (p: Place, measurement = LIFETIME) =>
      `${PARENT}/${p.instance}/${p.device()}/outlets/${p.outlet}${measurement}`;

    before(async () => {
      dir = await tempDir();
      broker = await Mosquitto.start();
      geist.set("ga", await startSimulator({ outlets: 4, seed: 61, clock: clock.now }));
      geist.set("gb", await startSimulator({ outlets: 3, seed: 62, clock: clock.now }));
      const common = {
        community: "lab-read",
        port: 0,
        outlets: 3,
        refreshMs: 100,
        clock: clock.now,
      } as const;
      snmp.set("ea", await startSnmpSimulator({ profile: "eaton-epdu", seed: 63, ...common }));
      snmp.set("rx", await startSnmpSimulator({ profile: "raritan-px2", seed: 64, ...common }));
      // The Eaton outlet's counter wraps about half-way through the run.
      const eaton = snmp.get("ea")!.unit;
      const amps = eaton.amps(eaton.outlets[WRAPPING - 1]!);
      const toWrapWh = Math.max(3, (amps * 230 * RUN_S * 0.45) / 3600);
      eaton.setEnergy(WRAPPING, WRAP - toWrapWh);
      wrapOffsetWh = WRAP - toWrapWh - eaton.truthWh(WRAPPING);

      for (const [id, sim] of geist) {
        for (let i = 0; i < (id === "ga" ? 4 : 3); i++)
          places.push({
            instance: id,
            outlet: i,
            truthWh: () => sim.energyTruthWh(geistDevice(id), i),
            counterWh: () => sim.outlet(geistDevice(id), i).energyKwh * 1000,
            device: () => geistDevice(id),
          });
      }
      // An Eaton unit is a chain of two devices (unit outlets 1-3 and 4-6); the Raritan one device.
      for (const [id, sim] of snmp)
        for (let d = 0; d < (id === "ea" ? 2 : 1); d++)
          for (let i = 0; i < 3; i++) {
            const n = d * 3 + i + 1;
            places.push({
              instance: id,
              outlet: i,
              truthWh: () => sim.unit.truthWh(n) + (id === "ea" && n === WRAPPING ? wrapOffsetWh : 0),
              counterWh: () => (sim.unit.outlets[n - 1]?.energyWh ?? NaN) % WRAP,
              device: () => (id === "ea" ? EATON[d]! : deviceOf(id)),
            });
          }
      prometheus = await Prometheus.start(`127.0.0.1:${(healthPort = await freePort())}`);
      const snmpYaml = (id: string, sim: SnmpSimulator) =>
        [
          `  ${id}:`,
          "    Driver: snmp",
          `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
          `    PollInterval: ${POLL_S}`,
        ].join("\n");
      const yaml = appYaml({
        pdus: [
          ...[...geist].map(([id, sim]) => pduYaml(id, sim, { actionsEnabled: true, pollInterval: POLL_S })),
          ...[...snmp].map(([id, sim]) => snmpYaml(id, sim)),
        ],
        api: { key: KEY },
        broker: { host: broker.host, port: broker.port },
        health: { port: healthPort },
        extra: [
          `State: { Dir: ${JSON.stringify(`${dir.path}/state`)} }`,
          `Energy: { ReportSource: "http://127.0.0.1:${prometheus.port}" }`,
          "Assets:",
          `  srv-a: { Tenant: acme, Cords: [{ Instance: ga, Outlet: 0 }, { Instance: ea, Device: ${EATON[0]}, Outlet: 0 }] }`,
          "  srv-b: { Tenant: acme, Cords: [{ Instance: ga, Outlet: 1 }, { Instance: gb, Outlet: 0 }] }",
          "  srv-c: { Tenant: globex, Cords: [{ Instance: gb, Outlet: 1 }, { Instance: rx, Outlet: 0 }] }",
          `  srv-d: { Tenant: globex, Cords: [{ Instance: ea, Device: ${EATON[0]}, Outlet: ${WRAPPING - 1} }, { Instance: ga, Outlet: 2 }] }`,
        ].join("\n"),
      });
      configFile = await dir.write("config.yaml", yaml);
      recorder = await Recorder.connect(broker, [
        `${PARENT}/+/+/outlets/+/measurements/#`,
        `${PARENT}/+/+/entity/+${LIFETIME}`,
      ]);
      await startBridge();
    });
    after(async () => {
      await recorder?.close();
      await bridge?.kill();
      await prometheus?.close();
      await Promise.allSettled([...geist.values(), ...snmp.values()].map((s) => s.close()));
      await broker?.stop();
      await dir?.remove();
    });

    it(`runs ${RUN_S} s through resets, a replaced unit, a wrap and two restarts`, async () => {
      await waitFor(
        () => {
          for (const id of snmp.keys()) {
            const m = recorder.messages.find(
              (x) => x.topic.startsWith(`${PARENT}/${id}/`) && x.topic.endsWith(LIFETIME),
            );
            if (m !== undefined) snmpDevices.set(id, m.topic.split("/")[2]!);
          }
          return places.every((p) => lastOf(topicOf(p)) !== undefined);
        },
        "every outlet's lifetime counter published",
        60_000,
      );
      await waitFor(
        async () => (await prometheus.query("pdu_asset_energy_lifetime_wh_total")).length === 4,
        "Prometheus scraping the assets' lifetime counters",
        30_000,
      );
      await sleep(2000);
      from = Math.ceil(Date.now() / 1000);
      await waitFor(() => Date.now() >= from * 1000 + 500, "the period's start");
      const startedAt = Date.now();
      const at = async (fraction: number) => {
        const wait = startedAt + fraction * RUN_S * 1000 - Date.now();
        if (wait > 0) await sleep(wait);
      };

      await at(0.1);
      const a0 = geist.get("ga")!;
      const res = await api.post(
        `/api/v1/instances/ga/outlets/${geistDevice("ga")}/0/control`,
        { action: "resetStats" },
        { "x-api-key": KEY },
      );
      assert.equal(res.status, 200, res.text);
      lost("ga", 0);

      await at(0.2);
      await restartBridge();

      await at(0.3);
      const before1 = a0.outlet(geistDevice("ga"), 1).energyKwh;
      await waitFor(
        async () => {
          if (a0.outlet(geistDevice("ga"), 1).energyKwh < before1) return true;
          await recorder.publish(`${PARENT}/ga/${geistDevice("ga")}/outlets/1/resetStats`, "1");
          await sleep(500);
          return false;
        },
        "resetStats by MQTT at the PDU",
        15_000,
      );
      lost("ga", 1);

      await at(0.4);
      a0.setEnergy(geistDevice("ga"), 2, 0);
      lost("ga", 2);

      await at(0.5);
      const old = geistDevice("gb");
      const fresh = geist.get("gb")!.replaceDevice(old);
      placeOf.set(fresh, old);
      for (let i = 0; i < 3; i++) lost("gb", i);

      await at(0.65);
      await restartBridge();

      await at(1);
      // The wrap happened: the PDU's own counter is below where it was set, the lifetime past 2^32.
      const wrapping = places.find((p) => p.device() === EATON[0] && p.outlet === WRAPPING - 1)!;
      await waitFor(
        () => Number(lastOf(topicOf(wrapping))?.payload) * 1000 > WRAP,
        "the Eaton outlet's lifetime counter past 2^32 Wh",
        60_000,
      );
      assert.ok(wrapping.counterWh() < 1e6, `the PDU's counter wrapped: ${wrapping.counterWh()}`);
      assert.ok(
        [...exited, bridge!].some((p) => p.stdout.includes("32-bit counter wrapped")),
        "the wrap is logged",
      );
    });

    it("never decreased any published lifetime counter", () => {
      const last = new Map<string, number>();
      let checked = 0;
      for (const m of recorder.messages) {
        if (!m.topic.endsWith(LIFETIME) || m.payload === "") continue;
        const [, instance = "", dev = "", kind = "", key = ""] = m.topic.split("/");
        const place = `${instance}/${placeOf.get(dev) ?? dev}/${kind}/${key}`;
        const value = Number(m.payload);
        assert.ok(Number.isFinite(value) && value >= 0, `${m.topic}: ${m.payload}`);
        const before = last.get(place) ?? 0;
        assert.ok(value >= before, `${m.topic} went from ${before} to ${value}`);
        last.set(place, value);
        checked++;
      }
      assert.ok(checked > places.length * 10, `${checked} values checked`);
    });

    it("ends at the ground truth within one poll interval's energy per event", async () => {
      clock.pause();
      // Polled at rest: every outlet's published reading is the PDU's paused counter.
      await waitFor(
        () =>
          places.every((p) => {
            const m = lastOf(topicOf(p, "/measurements/energy"));
            return m !== undefined && Math.abs(Number(m.payload) * 1000 - p.counterWh()) <= 1;
          }),
        "the paused counters polled",
        30_000,
      );
      await sleep(3 * POLL_S * 1000);
      const poll = (MAX_OUTLET_W * POLL_S) / 3600;
      const figures: string[] = [];
      for (const p of places) {
        const published = Number(lastOf(topicOf(p))?.payload) * 1000;
        const truth = p.truthWh();
        const events = losses.get(`${p.instance}/${p.outlet}`) ?? 0;
        const tolerance = 2 + events * poll;
        figures.push(`${keyOf(p)}: ${published} Wh, truth ${truth.toFixed(3)}`);
        assert.ok(published <= truth + 2, `${keyOf(p)}: ${published} Wh above the truth ${truth}`);
        assert.ok(
          truth - published <= tolerance,
          `${keyOf(p)}: published ${published} Wh, truth ${truth.toFixed(3)} Wh (−${tolerance.toFixed(2)} allowed)`,
        );
      }
      console.log(`fleet run of ${RUN_S} s: ${figures.join("; ")}`);
    });

    it("reports the counters' increase from Prometheus, per outlet and per tenant, in JSON and CSV", async () => {
      to = Math.floor(Date.now() / 1000);
      await waitFor(() => Date.now() >= to * 1000, "the period's end");
      await sleep(3000);
      const iso = (s: number) => new Date(s * 1000).toISOString().replace(".000Z", "Z");
      const query = `from=${iso(from)}&to=${iso(to)}`;
      // The counters' increase over the period, as MQTT carried them.
      const increase = new Map<string, number>();
      const rate = new Map<string, number>();
      for (const p of places) {
        const prefix = p.instance === "ea" ? `${PARENT}/ea/${p.device()}/` : `${PARENT}/${p.instance}/`;
        const topics = recorder.messages.filter(
          (m) => m.topic.startsWith(prefix) && m.topic.endsWith(`/outlets/${p.outlet}${LIFETIME}`),
        );
        const start = topics.filter((m) => m.at <= from * 1000).at(-1);
        const end = topics.filter((m) => m.at <= to * 1000).at(-1);
        assert.ok(start !== undefined && end !== undefined, keyOf(p));
        const wh = (Number(end.payload) - Number(start.payload)) * 1000;
        increase.set(keyOf(p), wh);
        rate.set(keyOf(p), wh / (to - from));
      }
      // A scrape interval's energy at each end, another at a replaced unit's change of series, and
      // the counters' rounding (1 Wh at each end).
      const tolerance = (key: string) => (rate.get(key) ?? 0) * POLL_S * (key.startsWith("gb/") ? 4 : 2) + 2;

      const json = await api.get(`/api/v1/energy?${query}&groupBy=outlet`);
      assert.equal(json.status, 200, json.text);
      const report = JSON.parse(json.text) as {
        rows: { instance: string; device: string; outlet: string; energyWh: number }[];
      };
      const reported = new Map<string, number>();
      for (const row of report.rows) {
        const key =
          row.instance === "ea" ? `ea/${row.device}/${row.outlet}` : `${row.instance}/${row.outlet}`;
        reported.set(key, (reported.get(key) ?? 0) + row.energyWh);
      }
      const csv = await api.get(`/api/v1/energy?${query}&groupBy=outlet&format=csv`);
      assert.equal(csv.status, 200, csv.text);
      const csvWh = new Map<string, number>();
      for (const line of csv.text.trimEnd().split("\r\n").slice(1)) {
        const [instance, device, outlet, wh] = line.split(",");
        const key = instance === "ea" ? `ea/${device}/${outlet}` : `${instance}/${outlet}`;
        csvWh.set(key, (csvWh.get(key) ?? 0) + Number(wh));
      }
      for (const [key, wh] of increase) {
        const t = tolerance(key);
        const got = reported.get(key) ?? NaN;
        assert.ok(
          Math.abs(got - wh) <= t,
          `${key}: reported ${got} Wh, the counter rose ${wh} Wh (±${t.toFixed(2)})`,
        );
        assert.ok(
          Math.abs((csvWh.get(key) ?? NaN) - got) < 0.01,
          `${key}: CSV ${csvWh.get(key)}, JSON ${got}`,
        );
      }

      const cords: Record<string, readonly string[]> = {
        acme: ["ga/0", `ea/${EATON[0]}/0`, "ga/1", "gb/0"],
        globex: ["gb/1", "rx/0", `ea/${EATON[0]}/${WRAPPING - 1}`, "ga/2"],
      };
      const tenants = await api.get(`/api/v1/energy?${query}&groupBy=tenant`);
      assert.equal(tenants.status, 200, tenants.text);
      const rows = (JSON.parse(tenants.text) as { rows: { tenant: string; energyWh: number }[] }).rows;
      const tenantCsv = await api.get(`/api/v1/energy?${query}&groupBy=tenant&format=csv`);
      assert.equal(tenantCsv.status, 200, tenantCsv.text);
      const csvLines = tenantCsv.text.trimEnd().split("\r\n");
      for (const [tenant, outlets] of Object.entries(cords)) {
        const wh = outlets.reduce((s, k) => s + (increase.get(k) ?? NaN), 0);
        const t = outlets.reduce((s, k) => s + tolerance(k), 0);
        const row = rows.find((r) => r.tenant === tenant);
        assert.ok(row !== undefined, `tenant ${tenant} in ${tenants.text}`);
        assert.ok(
          Math.abs(row.energyWh - wh) <= t,
          `tenant ${tenant}: reported ${row.energyWh} Wh, its outlets' counters rose ${wh} Wh (±${t.toFixed(2)})`,
        );
        const line = csvLines.find((l) => l.startsWith(`${tenant},`));
        assert.ok(
          line !== undefined && Math.abs(Number(line.split(",")[1]) - row.energyWh) < 0.01,
          String(line),
        );
      }
      console.log(
        `report over ${to - from} s: ${[...increase].map(([k, wh]) => `${k} ${wh.toFixed(1)}/${(reported.get(k) ?? NaN).toFixed(1)} Wh`).join("; ")}; ${rows.map((r) => `${r.tenant} ${r.energyWh.toFixed(1)} Wh`).join("; ")}`,
      );
    });
  },
);
