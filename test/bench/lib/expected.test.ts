/**
 * What a user should find on the broker for an instance (bench/lib/expected.ts), derived with the
 * product's discovery code from a real simulator's answer, and the pure helpers of the reader: the
 * comparison of what was read, the topic split, the reading rounds.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { writeBridgeConfig } from "../../../bench/lib/bridge.js";
import {
  ROUND_MESSAGES,
  compareConfigs,
  configKey,
  expectedInstance,
  hash53,
  readingRounds,
  splitConfigTopic,
} from "../../../bench/lib/expected.js";
import { loadConfigFile } from "../../../src/config/load.js";
import { createDriver } from "../../../src/pdu/drivers.js";
import { startSimulator } from "../../../src/simulator/index.js";

describe("bench expected", () => {
  it("a 24-outlet simulated PDU should have 207 discovery configs and 151 values; more configs with actions", async () => {
    const sim = await startSimulator({ outlets: 24, seed: 7 });
    const dir = mkdtempSync(join(tmpdir(), "bench-expected-"));
    try {
      const broker = { host: "127.0.0.1", port: 1883 };
      const make = async (actions: boolean) => {
        const file = writeBridgeConfig({
          dir,
          name: `c-${actions}`,
          ports: [sim.port],
          broker,
          pollIntervalS: 10,
          actions,
        });
        const config = await loadConfigFile(file, {});
        const driver = createDriver(config.instances[0]!);
        try {
          return expectedInstance(config, "pdu-0000", await driver.poll());
        } finally {
          await driver.close();
        }
      };
      const readOnly = await make(false);
      assert.equal(readOnly.nodeId, "pdu-bridge_pdu-0000");
      // Per outlet: a power binary sensor and 7 measurement sensors (the 6 the PDU reports and the
      // lifetime energy counter); per device: alarm, state and 8 entity measurement sensors (with
      // the lifetime counter), the device's problem binary sensor and alarm event entity, and a
      // problem binary sensor per load entity (its phase and two breakers; none is rated, so no
      // load sensors) (docs/mqtt.md, docs/energy.md). The values are the snapshot's readings: the
      // lifetime counters are the energy part's, counted from them, not a reading of the poll.
      assert.equal(readOnly.configs.size, 24 * 8 + 2 + 8 + 2 + 3);
      assert.equal(readOnly.values.size, 24 * 6 + 7);
      assert.equal(readOnly.firstDeviceId, sim.deviceIds()[0]);
      assert.match(
        readOnly.sampleConfigTopic!,
        /^homeassistant\/[a-z_]+\/pdu-bridge_pdu-0000\/[^/]+\/config$/,
      );
      const withActions = await make(true);
      assert.ok(
        withActions.configs.size > readOnly.configs.size,
        `switches, buttons and settings: ${withActions.configs.size}`,
      );
      // The sensors are the same configs either way, so the payload of one is found in both.
      const shared = [...readOnly.configs].filter(([k, v]) => withActions.configs.get(k) === v).length;
      assert.ok(shared > 24 * 6, `${shared} configs the same with and without actions`);
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("compares what was read with what should be there", () => {
    const expected = new Map([
      [configKey("sensor", "a"), hash53("A")],
      [configKey("sensor", "b"), hash53("B")],
      [configKey("switch", "a"), hash53("C")],
    ]);
    assert.deepEqual(compareConfigs(expected, new Map(expected)), {
      missing: 0,
      extra: 0,
      differing: 0,
      exact: true,
    });
    const read = new Map(expected);
    read.delete(configKey("sensor", "b"));
    read.set(configKey("switch", "a"), hash53("old"));
    read.set(configKey("sensor", "ghost"), hash53("G"));
    assert.deepEqual(compareConfigs(expected, read), { missing: 1, extra: 1, differing: 1, exact: false });
    assert.equal(compareConfigs(expected, new Map()).missing, 3);
  });

  it("splits config topics under a prefix of any depth, and nothing else", () => {
    assert.deepEqual(splitConfigTopic("homeassistant/sensor/pdu-bridge_x/outlet_D_0_energy/config", 1), {
      component: "sensor",
      nodeId: "pdu-bridge_x",
      objectId: "outlet_D_0_energy",
    });
    assert.deepEqual(splitConfigTopic("site/ha/switch/n/o/config", 2), {
      component: "switch",
      nodeId: "n",
      objectId: "o",
    });
    assert.equal(splitConfigTopic("homeassistant/sensor/n/o/state", 1), null);
    assert.equal(splitConfigTopic("homeassistant/sensor/n/config", 1), null);
    assert.equal(splitConfigTopic("homeassistant/sensor/n/o/p/config", 1), null);
  });

  it("reads in rounds that stay below the broker's queue", () => {
    const ids = Array.from({ length: 10 }, (_, i) => i);
    const rounds = readingRounds(ids, 177);
    assert.deepEqual(
      rounds.map((r) => r.length),
      [4, 4, 2],
    );
    assert.ok(4 * 177 <= ROUND_MESSAGES && ROUND_MESSAGES < 1000);
    assert.deepEqual(rounds.flat(), ids, "every instance once, in order");
    assert.deepEqual(
      readingRounds(ids, 5000).map((r) => r.length),
      Array(10).fill(1),
      "at least one instance a round",
    );
    assert.deepEqual(readingRounds([], 177), []);
  });

  it("hashes equal strings equally and 100,000 different ones differently", () => {
    assert.equal(hash53("homeassistant/sensor/x/config"), hash53("homeassistant/sensor/x/config"));
    const seen = new Set<number>();
    for (let i = 0; i < 100_000; i++)
      seen.add(hash53(`pdu-bridge/pdu-${i % 1000}/DEV/outlets/${i}/measurements/x`));
    assert.equal(seen.size, 100_000);
    assert.ok([...seen].every((h) => Number.isSafeInteger(h) && h >= 0));
  });
});
