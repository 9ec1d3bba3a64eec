/**
 * The scan of the bridge's log (bench/lib/bridge-log.ts): MQTT protocol errors, other MQTT errors,
 * lost connections, reconnects and ghost cleanup lines, as pino writes them.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { connectionTrouble, describeTrouble, scanBridgeLog } from "../../../bench/lib/bridge-log.js";

const line = (level: string, msg: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ level, time: "2026-11-26T08:00:00.000Z", pid: 1, name: "pdu-bridge", ...extra, msg });

describe("bench bridge-log", () => {
  it("a clean run: one connect, nothing else", () => {
    const scan = scanBridgeLog(
      [
        line("info", "connected to MQTT broker", { part: "mqtt", broker: "mqtt://127.0.0.1:1883" }),
        line("info", "instance online", { instance: "pdu-0000" }),
        line("info", "pdu-bridge started"),
        "",
      ].join("\n"),
    );
    assert.equal(connectionTrouble(scan), 0);
    assert.equal(scan.connects, 1);
    assert.equal(scan.reconnects, 0);
    assert.equal(scan.warnings, 0);
    assert.equal(describeTrouble(scan), "none");
  });

  it("counts protocol errors, other errors, lost connections and reconnects apart", () => {
    const scan = scanBridgeLog(
      [
        line("info", "connected to MQTT broker"),
        line("warn", "MQTT error", {
          broker: "mqtt://127.0.0.1:1883",
          err: "mqtt://127.0.0.1:1883: Protocol error: unsuback does not answer the publish pending on message id 8141",
        }),
        line("warn", "MQTT connection lost, reconnecting"),
        line("warn", "MQTT error", { err: "mqtt://127.0.0.1:1883: connect ECONNREFUSED 127.0.0.1:1883" }),
        line("info", "connected to MQTT broker"),
        line("warn", "MQTT connection lost, reconnecting"),
        line("info", "connected to MQTT broker"),
        line("warn", "MQTT message dropped: it cannot be published", { topic: '"x"', reason: "too big" }),
        line("info", "cleared retained discovery configs of things that no longer exist", {
          instance: "a",
          cleared: 3,
        }),
        line("info", "cleared retained discovery configs of things that no longer exist", {
          instance: "b",
          cleared: 1,
        }),
        "node:internal/process/esm_loader:40",
        "      internalBinding('errors').triggerUncaughtException(",
      ].join("\n"),
    );
    assert.equal(scan.protocolErrors, 1);
    assert.equal(scan.otherMqttErrors, 1);
    assert.equal(scan.connectionsLost, 2);
    assert.equal(scan.connects, 3);
    assert.equal(scan.reconnects, 2);
    assert.equal(scan.droppedLines, 1);
    assert.equal(scan.ghostsCleared, 4);
    assert.equal(scan.otherLines, 2, "a crash's stack is not JSON");
    assert.equal(scan.warnings, 5);
    assert.equal(connectionTrouble(scan), 1 + 1 + 2 + 2);
    assert.equal(
      describeTrouble(scan),
      "1 protocol error, 1 other MQTT error, 2 connections lost, 2 reconnects",
    );
    assert.equal(scan.samples.length, 5, "the first few lines worth reading");
    assert.match(scan.samples[0]!, /Protocol error/);
  });

  it("a bridge that never connected says so", () => {
    const scan = scanBridgeLog(line("warn", "MQTT error", { err: "connect ECONNREFUSED" }));
    assert.equal(scan.connects, 0);
    assert.equal(describeTrouble(scan), "1 other MQTT error, never connected");
  });
});
