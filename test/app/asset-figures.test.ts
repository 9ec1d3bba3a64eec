/**
 * How often an asset's figures are published (docs/assets.md, "MQTT and Home Assistant"), through
 * the whole service on mosquitto: two Geist simulators whose readings move at every read (as a
 * real PDU's do), on feeds A and B, both polled every second, and two assets with a cord on each.
 * Each poll of either PDU moves each asset's power, yet its power is published about once per poll
 * interval, not at each of its two cords' polls; a cord switched off sends the state at once with
 * the figures of that moment; mosquitto restarted without its retained messages: every topic of
 * every asset (the figures held back included) retained again after the bridge reconnects.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { AppHarness } from "../../testkit/app-harness.js";
import type { Mosquitto } from "../../testkit/mosquitto.js";
import {
  retainedAgain,
  startTwoFeedAssets,
  type TwoFeedAssets,
  type TwoFeedSims,
} from "../../testkit/two-feed-assets.js";
import { waitFor } from "../../testkit/wait.js";

/** Polls of a1 counted: over them b1 polls about as often, and each poll of either moves the sums. */
const POLLS = 12;

describe("an asset's figures with cords on two PDUs whose readings move at every poll: about once per poll interval", () => {
  let mosquitto: Mosquitto;
  let h: AppHarness<TwoFeedSims>;
  let devB: string;
  let rig: TwoFeedAssets;

  before(async () => {
    rig = await startTwoFeedAssets({ frozen: false, seeds: [41, 42] });
    ({ mosquitto, h } = rig);
    devB = h.sims.b1.deviceIds()[0]!;
  });
  after(() => rig?.close());

  const topic = (id: string, level: string) => `${h.parent}/$assets/${id}/${level}`;
  /** Waits for `n` polls of an instance, one after the other, from now. */
  const polls = async (id: TwoFeedSims, n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await h.waitForPoll(id, Date.now());
  };
  /**
   * Polls of an instance while `during` runs, counted by its simulator (each poll is one GET): a
   * watcher of the store's last success would miss polls when the event loop stalls under load.
   */
  const countPolls = async (id: TwoFeedSims, during: () => Promise<void>): Promise<number> => {
    const since = Date.now();
    await during();
    let gets = 0;
    for (const n of h.sims[id].pollers(since).values()) gets += n;
    return gets;
  };

  it("each poll of either cord's PDU moves the power, yet it is published about once per poll interval", async () => {
    for (const id of ["db", "web"]) {
      await h.mqtt.waitFor(topic(id, "state"), (m) => m.payload === "on");
      await h.mqtt.waitFor(topic(id, "power"), (m) => m.payload !== "");
    }
    await polls("a1", 2);
    h.mqtt.clear();
    const [pollsA, pollsB] = await Promise.all([
      countPolls("a1", () => polls("a1", POLLS)),
      countPolls("b1", () => polls("a1", POLLS)),
    ]);
    for (const id of ["db", "web"]) {
      const sent = h.mqtt.on(topic(id, "power")).map((m) => m.payload);
      // Each cord's PDU moved it at each of its polls: a publish per poll of either would be about
      // twice as many.
      assert.ok(
        sent.length <= Math.max(pollsA, pollsB) + 2,
        `${id}: ${sent.length} powers over ${pollsA} polls of a1 and ${pollsB} of b1: ${sent.join(", ")}`,
      );
      assert.ok(sent.length >= POLLS / 3, `${id}'s power still published: ${sent.join(", ")}`);
      assert.ok(
        pollsA + pollsB >= 2 * POLLS - 2,
        `both PDUs polled throughout (${pollsA} of a1, ${pollsB} of b1)`,
      );
    }
  });

  it("a cord switched off: the state sent at once, the figures of that moment with it", async () => {
    h.mqtt.clear();
    h.sims.b1.setOutletState(devB, 1, "off");
    await h.mqtt.waitFor(topic("web", "state"), (m) => m.payload === "partial");
    // The client may read the message after the state in a later turn: wait for one of the asset's.
    // Sent with the state, the power is the very next message of the bridge's, whatever the topic;
    // held back, the PDU's own topics of the same poll would come between.
    const state = (m: { topic: string }) => m.topic === topic("web", "state");
    const all = await waitFor(() => {
      const sent = h.mqtt.messages;
      const at = sent.findIndex(state);
      return sent.slice(at + 1).some((m) => m.topic.startsWith(`${h.parent}/$assets/web/`)) ? sent : null;
    }, "a message of the asset after its state");
    const at = all.findIndex(state);
    assert.equal(
      all[at + 1]?.topic,
      topic("web", "power"),
      `the power went with the state: ${all
        .slice(at, at + 6)
        .map((m) => m.topic.slice(h.parent.length))
        .join(", ")}`,
    );
    await h.mqtt.waitFor(topic("web", "redundancy"), (m) => m.payload === "lost");
    h.sims.b1.setOutletState(devB, 1, "on");
    await h.mqtt.waitFor(topic("web", "state"), (m) => m.payload === "on");
    await h.mqtt.waitFor(topic("web", "redundancy"), (m) => m.payload === "ok");
  });

  it("mosquitto restarted without its retained messages: every asset topic retained again, the figures included", async () => {
    const topics = ["db", "web"].flatMap((id) =>
      ["state", "power", "energy", "redundancy"].map((level) => topic(id, level)),
    );
    await mosquitto.restart();
    const fresh = await retainedAgain(rig, topics);
    try {
      for (const t of topics) {
        const m = fresh.last(t)!;
        assert.equal(m.retain, true, `${t} retained`);
        if (t.endsWith("/power") || t.endsWith("/energy"))
          assert.ok(Number.isFinite(Number(m.payload)) && m.payload !== "", `${t}: ${m.payload}`);
      }
    } finally {
      await fresh.close();
    }
  });
});
