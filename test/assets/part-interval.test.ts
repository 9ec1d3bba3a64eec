/**
 * The poll interval an asset's figures are spaced by (docs/assets.md, "MQTT and Home Assistant"):
 * the shortest of its cords' instances', as the configuration in force says, so a live change of an
 * instance's PollInterval (told on the bus, as the service tells it) moves it at once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { AssetsPart } from "../../src/assets/part.js";
import { EventBus } from "../../src/bus.js";
import { diffConfig } from "../../src/config/kubernetes/diff.js";
import type { Config } from "../../src/config/schema.js";
import { silentLogger } from "../../src/log.js";
import { OWN_ALL } from "../../src/ownership.js";
import { configFrom } from "../../testkit/http-harness.js";

const yaml = (a: number, b: number): string => `Pdus:
  a: { Connection: { Host: 192.0.2.1 }, PollInterval: ${a} }
  b: { Connection: { Host: 192.0.2.2 }, PollInterval: ${b} }
  c: { Connection: { Host: 192.0.2.3 } }
Assets:
  web:
    Cords:
      - { Instance: a, Outlet: 0 }
      - { Instance: b, Outlet: 0 }
  db:
    Cords:
      - { Instance: b, Outlet: 1 }
`;

test("an asset's poll interval is its cords' shortest, and follows a live change of PollInterval", async () => {
  let config: Config = await configFrom(yaml(10, 30));
  const bus = new EventBus();
  const part = new AssetsPart({
    config: () => config,
    bus,
    logger: silentLogger(),
    ownership: OWN_ALL,
    online: () => true,
  });
  const web = part.model.assets.get("web")!;
  const db = part.model.assets.get("db")!;
  assert.equal(part.pollIntervalMs(web), 10_000);
  assert.equal(part.pollIntervalMs(db), 30_000);
  assert.equal(part.pollIntervalMs(web), 10_000, "asked again under the same configuration");

  part.start();
  try {
    // The same assets under a configuration whose intervals changed.
    const next = await configFrom(yaml(60, 5));
    const { live } = diffConfig(config, next);
    assert.deepEqual(
      [...live.pollIntervals],
      [
        ["a", 60],
        ["b", 5],
      ],
    );
    config = next;
    bus.emit("configApplied", { config, live });
    assert.equal(part.pollIntervalMs(web), 5_000);
    assert.equal(part.pollIntervalMs(db), 5_000);
  } finally {
    part.stop();
  }
});
