/**
 * MQTT through the composed App and real simulators (the unit tests in test/mqtt drive the
 * publisher with built snapshots): an outlet or a device that disappears from the PDU has its
 * retained discovery cleared after the next poll, and a single unit next to a OneView cluster share
 * no topic and no unique id.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { sleep, type Recorder } from "../../testkit/mqtt-client.js";

type Sims = "unit" | "cluster";

describe("MQTT from live PDUs", () => {
  let h: AppHarness<Sims>;
  let discovery: Recorder;

  before(async () => {
    h = await startAppHarness<Sims>({
      sims: { unit: { outlets: 4, seed: 21 }, cluster: { oneview: { members: 2 }, outlets: 4, seed: 22 } },
      yaml: (s) =>
        appYaml({
          pdus: [
            pduYaml("unit", s.unit, { pollInterval: 1, actionsEnabled: true }),
            pduYaml("cluster", s.cluster, { pollInterval: 1, actionsEnabled: true }),
          ],
        }),
    });
    await h.waitForPoll("unit");
    await h.waitForPoll("cluster");
    discovery = await h.subscribe(["homeassistant/#"]);
    // Retained messages arrive in the broker's order: wait until they stop coming.
    let count = -1;
    while (count !== discovery.messages.length) {
      count = discovery.messages.length;
      await sleep(300);
    }
  });
  after(() => h?.close());

  /** Retained discovery configs now on the broker (empty payloads are cleared ones). */
  const configs = () =>
    new Map(
      [...discovery.latest("homeassistant/")].filter(([, m]) => m.payload.length > 0).map(([t, m]) => [t, m]),
    );

  it("gives a single unit and a cluster distinct topics and unique ids", () => {
    const all = [...configs().values()].map((m) => JSON.parse(m.payload) as Record<string, unknown>);
    const uniqueIds = all.map((c) => String(c.unique_id));
    assert.equal(new Set(uniqueIds).size, uniqueIds.length, "no unique_id is used twice");
    const ofUnit = uniqueIds.filter((id) => id.includes("_unit_"));
    const ofCluster = uniqueIds.filter((id) => id.includes("_cluster_"));
    assert.ok(ofUnit.length > 0 && ofCluster.length > 0);
    assert.equal(ofUnit.length + ofCluster.length, uniqueIds.length, "every id names its instance");
    const stateTopics = all.flatMap((c) => (typeof c.state_topic === "string" ? [c.state_topic] : []));
    assert.ok(
      stateTopics.every((t) => t.startsWith("pdu-bridge/unit/") || t.startsWith("pdu-bridge/cluster/")),
    );
    // The cluster's three units are all there, and the single unit's device is not among them.
    const unitDevice = h.sims.unit.deviceIds()[0]!;
    for (const id of h.sims.cluster.deviceIds()) {
      assert.ok(
        stateTopics.some((t) => t.startsWith(`pdu-bridge/cluster/${id}/`)),
        `cluster device ${id}`,
      );
      assert.notEqual(id, unitDevice);
    }
  });

  it("clears the discovery of an outlet that the PDU no longer reports", async () => {
    const deviceId = h.sims.unit.deviceIds()[0]!;
    const outletConfig = `homeassistant/switch/pdu-bridge_unit/outlet_${deviceId}_3_power/config`;
    const deviceConfig = `homeassistant/binary_sensor/pdu-bridge_unit/device_${deviceId}_alarm/config`;
    assert.ok(configs().has(outletConfig), "outlet 3 is discovered first");
    assert.ok(configs().has(deviceConfig));

    h.sims.unit.removeOutlet(deviceId, 3);
    const cleared = await discovery.waitFor(outletConfig, (m) => m.payload.length === 0, 10_000);
    assert.equal(cleared.retain, false, "the clearing message arrives live");
    assert.ok(configs().has(deviceConfig), "the device itself stays");
    assert.ok(
      [...configs().keys()].every((t) => !t.includes(`outlet_${deviceId}_3_`)),
      "every entity of outlet 3 is cleared",
    );
    // A new subscriber sees no retained config of the removed outlet at all.
    const fresh = await h.subscribe([`homeassistant/+/pdu-bridge_unit/+/config`]);
    await fresh.waitFor(deviceConfig);
    assert.equal(fresh.on(outletConfig).length, 0);
  });
});
