/**
 * Ghost cleanup of a fleet whose retained configs are more than a broker hands one subscription:
 * mosquitto with its default configuration queues 1,000 messages per client and drops the rest, so
 * the bridge must read its configs in rounds. A restart after every PDU lost an outlet clears that
 * outlet's configs on every instance, and nothing the instances still produce.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { silentLogger } from "../../src/log.js";
import { startMqttBridge } from "../../src/mqtt/bridge.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { mqttTestConfig } from "../../testkit/mqtt-config.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const IDS = Array.from({ length: 14 }, (_, i) => `rack${String(i).padStart(2, "0")}`);
const OUTLETS = 24;
const D = "homeassistant";

/** The retained discovery configs of each instance, read one instance per subscription. */
async function retainedConfigs(broker: Mosquitto): Promise<Map<string, Set<string>>> {
  const result = new Map<string, Set<string>>();
  for (const id of IDS) {
    const reader = await Recorder.connect(broker, [`${D}/+/pdu-bridge_${id}/+/config`]);
    try {
      await sleep(150);
      await waitFor(() => reader.messages.length > 0, `${id}'s configs`, 5000);
      await sleep(150);
      result.set(
        id,
        new Set(reader.messages.filter((m) => m.retain && m.payload !== "").map((m) => m.topic)),
      );
    } finally {
      await reader.close();
    }
  }
  return result;
}

describe("ghost cleanup of more configs than one subscription is handed (default mosquitto)", () => {
  let broker: Mosquitto;
  before(async () => {
    broker = await Mosquitto.start();
  });
  after(async () => {
    await broker.close();
  });

  it("clears the lost outlet's configs on every instance after a restart, and nothing else", async () => {
    const config = await mqttTestConfig({
      broker: { host: broker.host, port: broker.port },
      instances: Object.fromEntries(IDS.map((id) => [id, true])),
    });
    // First life: every PDU with 24 outlets.
    const firstBus = new EventBus();
    const first = new SnapshotStore(IDS, { bus: firstBus });
    for (const id of IDS) first.recordSuccess(id, singleUnit(id, "DEV1", OUTLETS));
    const bridge1 = await startMqttBridge({ config, store: first, bus: firstBus, logger: silentLogger() });
    const before = await waitFor(
      async () => {
        const configs = await retainedConfigs(broker);
        const counts = [...configs.values()].map((s) => s.size);
        return counts.every((n) => n > 0 && n === counts[0]) ? configs : null;
      },
      "every instance's discovery",
      30_000,
    );
    await bridge1.stop();
    first.close();
    const perInstance = before.get(IDS[0]!)!.size;
    assert.ok(
      perInstance * IDS.length > 1500,
      `${perInstance * IDS.length} configs: more than one subscription gets`,
    );
    const lost = (id: string) => [...before.get(id)!].filter((t) => t.includes(`_DEV1_${OUTLETS - 1}_`));
    assert.ok(lost(IDS[0]!).length > 0);

    // Second life: outlet 24 is gone from every PDU.
    const secondBus = new EventBus();
    const second = new SnapshotStore(IDS, { bus: secondBus });
    for (const id of IDS) second.recordSuccess(id, singleUnit(id, "DEV1", OUTLETS - 1));
    const capture = new LogCapture();
    const bridge2 = await startMqttBridge({ config, store: second, bus: secondBus, logger: capture.logger });
    try {
      await waitFor(
        () =>
          capture.lines.filter((l) => String(l.msg).startsWith("cleared retained discovery")).length ===
          IDS.length,
        "a cleanup line per instance",
        60_000,
      );
      const afterwards = await retainedConfigs(broker);
      for (const id of IDS) {
        const now = afterwards.get(id)!;
        assert.deepEqual(
          lost(id).filter((t) => now.has(t)),
          [],
          `${id}: the lost outlet's configs are cleared`,
        );
        const kept = [...before.get(id)!].filter((t) => !lost(id).includes(t));
        assert.deepEqual(
          kept.filter((t) => !now.has(t)),
          [],
          `${id}: every config it still produces is there`,
        );
      }
      const cleared = capture.lines
        .filter((l) => String(l.msg).startsWith("cleared retained discovery"))
        .map((l) => l.cleared);
      assert.deepEqual(
        cleared,
        IDS.map((id) => lost(id).length),
      );
    } finally {
      await bridge2.stop();
      second.close();
    }
  });
});
