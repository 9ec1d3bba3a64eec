/**
 * Starts as a user sees them (bench/lib/starts.ts, bench/lib/user-view.ts): how runs become rows,
 * and the whole measurement on a tiny fleet: the real bridge (`node dist/src/main.js --config F`)
 * polling 3 simulated PDUs, a mosquitto with its default limits, the reader in its own process. Its
 * configs are found exact (the product's own payloads), its values all seen, its log clean; the
 * restart clears the planted ghosts. A bridge whose discovery differs from what the reader expects
 * (another expire_after) is never counted complete.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";
import { scanBridgeLog } from "../../../bench/lib/bridge-log.js";
import { startBridge, writeBridgeConfig } from "../../../bench/lib/bridge.js";
import { startBroker } from "../../../bench/lib/broker.js";
import { DIST, IpcChild, stopChild } from "../../../bench/lib/child.js";
import { withRig } from "../../../bench/lib/fleet-rig.js";
import type { BenchContext } from "../../../bench/lib/measure.js";
import {
  discoveryTargetSeconds,
  measureStarts,
  startRows,
  type StartRun,
} from "../../../bench/lib/starts.js";
import { startSimulator } from "../../../src/simulator/index.js";
import { MOSQUITTO } from "../../../testkit/mosquitto.js";
import { waitFor } from "../../../testkit/wait.js";

const clean = scanBridgeLog(JSON.stringify({ level: "info", msg: "connected to MQTT broker" }));

function run(over: Partial<StartRun> = {}): StartRun {
  return {
    label: "plain command, mosquitto defaults, clean start",
    limits: "default",
    flags: "plain",
    restart: false,
    pdus: 1000,
    intervalS: 10,
    targetSeconds: 60,
    runSeconds: 40,
    discoverySeconds: 25,
    discoveryP50Seconds: 12,
    discoveryP90Seconds: 22,
    valuesSeconds: 11,
    valuesP50Seconds: 6,
    status: {
      t0: 0,
      discovery: {
        instances: 1000,
        complete: 1000,
        completeAt: 25_000,
        instanceTimes: [],
        configsExpected: 177_000,
        configsRetained: 177_000,
        missing: 0,
        extra: 0,
        differing: 0,
        neverRead: 0,
        passes: 9,
        lastPassMs: 300,
        markerTimeouts: 0,
      },
      values: {
        instances: 1000,
        complete: 1000,
        completeAt: 11_000,
        instanceTimes: [],
        expected: 151_000,
        seen: 151_000,
        unexpected: 0,
        messages: 300_000,
      },
    },
    verify: {
      instances: 1000,
      read: 1000,
      exact: 1000,
      missing: 0,
      extra: 0,
      differing: 0,
      markerTimeouts: 0,
    },
    log: clean,
    logFile: "x.log",
    hwmMb: 210,
    planted: null,
    exited: false,
    ...over,
  };
}

const results = (rows: ReturnType<typeof startRows>) =>
  rows.map((r) => `${r.metric.split(": ")[1]} ${String(r.pass)}`);

describe("bench starts", () => {
  it("targets: 60 s per 1000 PDUs, 60 s at least", () => {
    assert.equal(discoveryTargetSeconds(1000), 60);
    assert.equal(discoveryTargetSeconds(4000), 240);
    assert.equal(discoveryTargetSeconds(20), 60);
  });

  it("a good run passes all four rows", () => {
    const rows = startRows("fleet", [run()], { rssTargets: true });
    assert.deepEqual(results(rows), [
      "discovery retained for every instance true",
      "every value published once true",
      "MQTT protocol errors, lost connections, reconnects true",
      "RSS peak over the whole life (VmHWM) true",
    ]);
    assert.equal(rows[3]!.target, "≤ 250 MB");
    assert.equal(startRows("fleet", [run({ flags: "image" })], { rssTargets: true })[3]!.target, "≤ 200 MB");
    assert.equal(
      startRows("scale", [run()], { rssTargets: false })[3]!.pass,
      null,
      "information at other sizes",
    );
    assert.match(
      startRows("scale", [run()], { rssTargets: false, prefix: "4000 PDUs @30 s: " })[0]!.metric,
      /^4000 PDUs @30 s: plain/,
    );
  });

  it("fails what a user would notice, and says why", () => {
    const never = startRows(
      "fleet",
      [
        run({
          discoverySeconds: null,
          status: {
            ...run().status,
            discovery: { ...run().status.discovery, complete: 2, configsRetained: 354, missing: 176_646 },
          },
        }),
      ],
      {
        rssTargets: true,
      },
    )[0]!;
    assert.equal(never.pass, false);
    assert.match(never.note!, /2 of 1000 instances complete .* 354 of 177000 configs retained/);
    assert.equal(
      startRows("fleet", [run({ discoverySeconds: 61 })], { rssTargets: true })[0]!.pass,
      false,
      "too late",
    );
    const lost = startRows("fleet", [run({ verify: { ...run().verify, exact: 990, missing: 10 } })], {
      rssTargets: true,
    })[0]!;
    assert.equal(lost.pass, false, "configs that went after the instance was complete");
    assert.match(lost.note!, /10 instances not exact/);
    assert.equal(startRows("fleet", [run({ valuesSeconds: null })], { rssTargets: true })[1]!.pass, false);
    const trouble = startRows(
      "fleet",
      [
        run({
          log: { ...clean, protocolErrors: 1, connects: 2, reconnects: 1, samples: ['{"msg":"MQTT error"}'] },
        }),
      ],
      { rssTargets: true },
    )[2]!;
    assert.equal(trouble.pass, false);
    assert.equal(trouble.measured, 2);
    assert.match(trouble.note!, /1 protocol error, 1 reconnect; first: \{"msg":"MQTT error"\}/);
    assert.equal(
      startRows("fleet", [run({ log: { ...clean, connects: 0 } })], { rssTargets: true })[2]!.pass,
      false,
    );
    assert.equal(startRows("fleet", [run({ hwmMb: 251 })], { rssTargets: true })[3]!.pass, false);
    assert.deepEqual(
      startRows("fleet", [run({ exited: true })], { rssTargets: true }).map((r) => r.pass),
      [false, false, false, false],
      "a bridge that died fails every row",
    );
  });

  it("on a tiny fleet: a clean start and a restart over retained configs and planted ghosts, all complete", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "bench-starts-"));
    const lines: string[] = [];
    const ctx: BenchContext = {
      quick: true,
      profile: false,
      tools: { mosquitto: MOSQUITTO, wrk: null },
      workDir,
      stamp: "test",
      bridgeNodeArgs: [],
      log: (line) => lines.push(line),
    };
    try {
      const runs = await withRig(ctx, { name: "starts", pdus: 3, intervalS: 2 }, (rig) =>
        measureStarts(rig, [{ limits: "default", flags: "plain" }]),
      );
      assert.equal(runs.length, 2);
      const [first, second] = runs as [StartRun, StartRun];
      for (const r of runs) {
        assert.notEqual(r.discoverySeconds, null, `${r.label}: discovery complete\n${lines.join("\n")}`);
        assert.notEqual(r.valuesSeconds, null, `${r.label}: values complete`);
        assert.deepEqual(
          { read: r.verify.read, exact: r.verify.exact, extra: r.verify.extra },
          { read: 3, exact: 3, extra: 0 },
          `${r.label}: the final read finds every instance exact`,
        );
        assert.equal(r.status.values.seen, 3 * 151);
        assert.equal(r.log.connects, 1);
        assert.ok(r.hwmMb > 30, `${r.label}: VmHWM of a node process (${r.hwmMb} MB)`);
      }
      assert.equal(first.restart, false);
      assert.equal(first.planted, null);
      assert.equal(second.restart, true);
      assert.deepEqual(second.planted, { ghosts: 3, stale: 3 });
      assert.equal(second.log.ghostsCleared, 3, "the bridge cleared the planted ghosts");
      assert.deepEqual(
        startRows("t", runs, { rssTargets: true }).map((r) => r.pass),
        Array(8).fill(true),
      );
    } finally {
      rmSync(workDir, { recursive: true, force: true });
    }
  });

  it("a bridge whose configs differ from what the reader expects is never complete", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "bench-starts-"));
    const sims = await Promise.all([0, 1].map((seed) => startSimulator({ outlets: 4, seed })));
    const broker = await startBroker(MOSQUITTO, "default");
    const ports = sims.map((s) => s.port);
    const expectedFile = writeBridgeConfig({
      dir: workDir,
      name: "expected",
      ports,
      broker,
      pollIntervalS: 1,
    });
    // The bridge runs with another SensorExpireAfterSeconds: same topics, other payloads.
    const bridgeFile = writeBridgeConfig({ dir: workDir, name: "bridge", ports, broker, pollIntervalS: 1 });
    writeFileSync(
      bridgeFile,
      readFileSync(bridgeFile, "utf8").replace(
        "SensorExpireAfterSeconds: 300",
        "SensorExpireAfterSeconds: 120",
      ),
    );
    const view = new IpcChild(resolve(DIST, "bench/lib/user-view.js"), [expectedFile]);
    try {
      await view.ready();
      await view.request("watch", { url: broker.url });
      const bridge = await startBridge({
        configFile: bridgeFile,
        logFile: join(workDir, "bridge.log"),
        flags: "plain",
      });
      try {
        interface Status {
          discovery: { complete: number; differing: number; missing: number; extra: number };
          values: { complete: number };
        }
        const status = await waitFor(
          async () => {
            const s = await view.request<Status>("status");
            return s.values.complete === 2 && s.discovery.differing > 0 && s.discovery.missing === 0
              ? s
              : null;
          },
          "every config read with its other payload",
          30_000,
          200,
        );
        assert.equal(status.discovery.complete, 0);
        assert.equal(status.discovery.extra, 0, "the same topics");
        const verify = await view.request<{ exact: number; differing: number }>("verify");
        assert.equal(verify.exact, 0);
        assert.ok(verify.differing > 0);
      } finally {
        await stopChild(bridge.child);
      }
      await view.request("unwatch");
    } finally {
      await view.stop();
      await broker.close();
      await Promise.all(sims.map((s) => s.close()));
      rmSync(workDir, { recursive: true, force: true });
    }
  });
});
