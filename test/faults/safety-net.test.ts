/**
 * The process-level safety net (docs/reliability.md, "The process-level safety net"), in the real
 * CLI against a spawned mosquitto and against the embedded broker, with faults no input can cause
 * injected by testkit/inject.ts:
 *
 * - a promise rejected with no handler: logged, and the service keeps serving (still READY, still
 *   polling, the REST API answers), where node's default ends the process (exit 1);
 * - an exception nothing catches: logged, and the service stops as on SIGTERM (`offline` published
 *   and left retained, `pdu-bridge stopped`) with exit code 1, within the 5 s of a stop, where node's
 *   default ends the process at once, leaving the bridge's `online` retained.
 *
 * The child processes are not watched for crash patterns (their logs name what was injected); each
 * case checks the exit itself.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { BridgeProcess, pollCount, until } from "../../testkit/faults-harness.js";
import { INJECT_DIR_VARIABLE } from "../../testkit/inject.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { DIST, freePort } from "../../testkit/repo.js";

failOnUnhandled();

const P = "safety-net";
const PRELOAD = pathToFileURL(join(DIST, "testkit", "inject.js")).href;

for (const brokerKind of ["mosquitto", "embedded"] as const) {
  describe(`the process-level safety net (${brokerKind} broker)`, () => {
    let mosquitto: Mosquitto | null = null;
    let sim: Simulator;
    let dir: string;
    const bridges: BridgeProcess[] = [];
    const recorders: Recorder[] = [];

    before(async () => {
      sim = await startSimulator({ outlets: 2, seed: 61 });
      mosquitto = brokerKind === "mosquitto" ? await Mosquitto.start() : null;
      dir = await mkdtemp(join(tmpdir(), "pdu-bridge-inject-"));
    });

    after(async () => {
      for (const r of recorders) await r.close();
      for (const b of bridges) await b.close();
      await mosquitto?.close();
      await sim?.close();
      await rm(dir, { recursive: true, force: true });
    });

    /** A bridge with the injection preloaded, polled once, READY, and a subscriber to its status. */
    const start = async () => {
      const broker = mosquitto ?? { host: "127.0.0.1", port: await freePort() };
      const bridge = await BridgeProcess.start(
        { broker, embedded: mosquitto === null, parentTopic: P, pdus: [{ id: "lab", sim, pollInterval: 1 }] },
        `safety-net-${brokerKind}`,
        { nodeArgs: ["--import", PRELOAD], env: { [INJECT_DIR_VARIABLE]: dir }, watch: false },
      );
      bridges.push(bridge);
      await bridge.waitPolled(["lab"]);
      await until(async () => (await bridge.readyz()).status === 200, "READY", 15_000);
      const status = await Recorder.connect(broker, [`${P}/status`]);
      recorders.push(status);
      await until(() => status.last(`${P}/status`)?.payload === "online", "online", 10_000);
      return { bridge, status };
    };

    it("a rejection nothing handles is logged; the service keeps serving", async () => {
      const { bridge } = await start();
      await writeFile(join(dir, "reject"), "");
      const line = await bridge.cli.waitForLog(
        (l) => l.level === "error" && String(l.msg).startsWith("unhandled rejection"),
        "the rejection logged",
      );
      assert.match(JSON.stringify(line), /injected rejection/);
      const polls = pollCount(sim);
      await until(() => pollCount(sim) >= polls + 2, "two more polls", 15_000);
      assert.equal(bridge.cli.exit, null, "still running");
      assert.equal((await bridge.readyz()).status, 200);
      assert.equal((await bridge.api("/api/v1/readings?instance=lab")).status, 200);
      const exit = await bridge.terminate();
      assert.equal(exit.exit.code, 0);
    });

    it("an exception nothing catches is logged; the service stops cleanly with exit 1, offline published", async () => {
      const { bridge, status } = await start();
      const thrown = Date.now();
      await writeFile(join(dir, "throw"), "");
      const exit = await bridge.child.exited;
      assert.equal(exit.code, 1, bridge.cli.output.slice(-2000));
      assert.ok(exit.at - thrown < 5000, `exit ${exit.at - thrown} ms after the exception`);
      const logs = bridge.logLines();
      const fatal = logs.find((l) => String(l.msg).startsWith("uncaught exception"));
      assert.ok(fatal !== undefined, "the exception is logged");
      assert.equal(fatal.level, "fatal");
      assert.match(JSON.stringify(fatal), /injected exception/);
      assert.ok(
        logs.some((l) => l.msg === "pdu-bridge stopped"),
        "stopped in order, not by the deadline",
      );
      if (mosquitto !== null) {
        // The bridge's own broker is gone with it: only an external one keeps `offline` retained.
        await until(() => status.last(`${P}/status`)?.payload === "offline", "offline published", 5000);
        const later = await Recorder.connect(mosquitto, [`${P}/status`]);
        recorders.push(later);
        await until(() => later.last(`${P}/status`)?.retain === true, "the retained status", 5000);
        assert.equal(later.last(`${P}/status`)?.payload, "offline");
      }
    });
  });
}
