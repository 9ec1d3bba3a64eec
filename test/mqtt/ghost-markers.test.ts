/**
 * Ghost cleanup whose first round's marker comes back late (docs/mqtt.md, "Ghost cleanup"): a
 * bridge starting a large fleet publishes a flood of discovery configs, and its first marker can
 * wait behind them longer than the marker wait. The rounds then end by quiet time only until a
 * marker comes back: every later round still publishes its marker, so the reading goes back to
 * ending rounds by markers at once, rather than spending a second of quiet per round for the rest
 * of the fleet. Real mosquitto; the sweeper's sink is a real mqtt.js client whose first marker
 * publish is held back past the marker wait.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connect, type MqttClient } from "mqtt";
import { GhostSweeper, MARKER_WAIT_MS, type GhostSink } from "../../src/mqtt/ghost-cleanup.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";

const D = "homeassistant";
const MARKER = "pdu-bridge/$bridge/sweep";
const IDS = Array.from({ length: 8 }, (_, i) => `rack${i}`);
const nodeId = (id: string): string => `pdu-bridge_${id}`;
/** Each instance's configs: outlets 0 to 4 still exist, 5 to 9 are ghosts. */
const configTopic = (id: string, outlet: number): string =>
  `${D}/sensor/${nodeId(id)}/outlet_DEV_${outlet}_power/config`;
const KEPT = [0, 1, 2, 3, 4];
const GHOSTS = [5, 6, 7, 8, 9];

describe("ghost cleanup whose first marker comes back late", () => {
  let broker: Mosquitto;
  let client: MqttClient;
  let sweeper: GhostSweeper | null = null;
  const capture = new LogCapture();

  before(async () => {
    broker = await Mosquitto.start();
    const planter = await Recorder.connect(broker, []);
    try {
      for (const id of IDS)
        for (const outlet of [...KEPT, ...GHOSTS])
          await planter.publish(configTopic(id, outlet), JSON.stringify({ name: "old" }), true);
    } finally {
      await planter.close();
    }
    client = connect(broker.url, { clientId: "ghost-markers", clean: true, protocolVersion: 5 });
    await new Promise<void>((resolve, reject) => {
      client.once("connect", () => resolve());
      client.once("error", reject);
    });
  });

  after(async () => {
    sweeper?.close();
    await client?.endAsync(true);
    await broker.close();
  });

  it("ends the later rounds by their markers again, and clears the ghosts and nothing else", async () => {
    const cleared: string[] = [];
    let heldBack = false;
    const sink: GhostSink = {
      publish: (topic, payload, qos, retain) => {
        if (topic.startsWith(`${MARKER}/`) && !heldBack) {
          // The first marker waits behind a flood, past the marker wait.
          heldBack = true;
          setTimeout(() => client.publish(topic, payload, { qos, retain }), MARKER_WAIT_MS + 1500).unref();
          return true;
        }
        if (payload === "" && retain) cleared.push(topic);
        client.publish(topic, payload, { qos, retain });
        return true;
      },
      subscribeOnce: async (filters, options) => {
        const granted = await client.subscribeAsync([...filters], { qos: 1, nl: options?.noLocal === true });
        return granted.map((g) => g.topic);
      },
      // As the bridge's connection does: a failed unsubscribe is not the sweeper's concern.
      unsubscribe: (filters) =>
        client.unsubscribeAsync([...filters]).then(
          () => undefined,
          () => undefined,
        ),
    };
    const kept = (id: string): ReadonlySet<string> => new Set(KEPT.map((o) => configTopic(id, o)));
    const made = new GhostSweeper({
      prefix: D,
      nodeIds: new Map(IDS.map((id) => [nodeId(id), id])),
      sink,
      current: kept,
      markerTopic: MARKER,
      // One instance a round (ten configs each): a round per instance.
      roundConfigs: 10,
      logger: capture.logger,
    });
    sweeper = made;
    client.on("message", (topic, payload, packet) => {
      if (made.accepts(topic)) made.collect(topic, payload, packet.retain);
    });
    made.onConnect();

    const done = await waitFor(
      () => capture.lines.find((l) => l.msg === "ghost cleanup: the retained discovery configs are read"),
      "the end of the reading",
      60_000,
    );
    assert.ok(heldBack, "the first marker was held back");
    assert.equal(done.rounds, IDS.length, "a round per instance");
    // Only the first round (its marker late) ends by quiet time; without markers published while
    // they were lost, every round would.
    assert.equal(done.unmarked, 1, `rounds without their marker: ${String(done.unmarked)}`);
    const warnings = capture.lines.filter((l) => String(l.msg).includes("marker topic in time"));
    assert.equal(warnings.length, 1, "the loss logged once");

    const ghosts = IDS.flatMap((id) => GHOSTS.map((o) => configTopic(id, o))).sort();
    await waitFor(() => cleared.length >= ghosts.length, "every ghost cleared");
    assert.deepEqual([...cleared].sort(), ghosts, "each ghost cleared once, nothing else");
  });
});
