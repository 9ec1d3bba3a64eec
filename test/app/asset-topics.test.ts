/**
 * An asset's retained topics through the whole service, on mosquitto (docs/assets.md, "MQTT and
 * Home Assistant"): the asset book writes its states in place and the topics skip an asset whose
 * state did not move, so every move must still reach the broker and nothing that reads the same may
 * be sent again. Two frozen Geist simulators on feeds A and B (nothing moves unless the test moves
 * it), two assets with a cord on each. One cord's power moved at its PDU: that asset's power sent
 * once per move, its other topics and the other asset's never again; a move at the other PDU just
 * after one was sent (held back, at most once per poll interval) still sent with nothing moving
 * after; a cord switched off: its state
 * and then its redundancy sent; mosquitto restarted without its retained messages: every asset's
 * topics retained again after the bridge reconnects.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { AppHarness } from "../../testkit/app-harness.js";
import type { Mosquitto } from "../../testkit/mosquitto.js";
import type { Received } from "../../testkit/mqtt-client.js";
import {
  retainedAgain,
  startTwoFeedAssets,
  type TwoFeedAssets,
  type TwoFeedSims,
} from "../../testkit/two-feed-assets.js";
import { waitFor } from "../../testkit/wait.js";

interface RestAsset {
  readonly state: string;
  readonly power: number | null;
  readonly redundancy: string;
  readonly readings: readonly { readonly power: number | null }[];
}

describe("an asset's retained topics: every move sent, nothing that reads the same sent again, all again after a broker restart", () => {
  let mosquitto: Mosquitto;
  let h: AppHarness<TwoFeedSims>;
  let devA: string;
  let devB: string;
  let rig: TwoFeedAssets;

  before(async () => {
    rig = await startTwoFeedAssets({ frozen: true, seeds: [31, 32] });
    ({ mosquitto, h } = rig);
    devA = h.sims.a1.deviceIds()[0]!;
    devB = h.sims.b1.deviceIds()[0]!;
  });
  after(() => rig?.close());

  const topic = (id: string, level: string) => `${h.parent}/$assets/${id}/${level}`;
  const asset = async (id: string): Promise<RestAsset> => {
    const res = await h.api.get(`/api/v1/assets/${id}`);
    assert.equal(res.status, 200, res.text);
    return res.json<RestAsset>();
  };
  /** Waits for `n` polls of every instance that start from now. */
  const polls = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const since = Date.now();
      await Promise.all(["a1", "b1"].map((id) => h.waitForPoll(id, since)));
    }
  };
  const near = (payload: string, watts: number) =>
    payload !== "" && Math.abs(Number(payload) - watts) < 0.006;
  /** The messages on an asset's topics since the recorder was cleared. */
  const ofAssets = (): Received[] =>
    h.mqtt.messages.filter((m) => m.topic.startsWith(`${h.parent}/$assets/`));

  it("one cord's power moved at its PDU: that asset's power sent once per move, nothing else sent again", async () => {
    for (const id of ["db", "web"]) {
      await h.mqtt.waitFor(topic(id, "state"), (m) => m.payload === "on");
      await h.mqtt.waitFor(topic(id, "power"), (m) => m.payload !== "");
      await h.mqtt.waitFor(topic(id, "redundancy"), (m) => m.payload === "ok");
    }
    await waitFor(async () => (await asset("db")).power !== null, "db's power read");
    const db = await asset("db");
    const [a, b] = db.readings.map((r) => r.power!);
    h.mqtt.clear();
    await polls(2);
    // a1's cord of db draws 37 W more: only db's sum moves.
    h.sims.a1.setMeasurementRaw(devA, 0, "realPower", String(a! + 37));
    await h.mqtt.waitFor(topic("db", "power"), (m) => near(m.payload, a! + 37 + b!));
    await polls(2);
    // Then b1's: the message of this move comes after any the polls between sent.
    h.sims.b1.setMeasurementRaw(devB, 0, "realPower", String(b! + 11));
    await h.mqtt.waitFor(topic("db", "power"), (m) => near(m.payload, a! + 37 + b! + 11));
    const sent = ofAssets().map((m) => `${m.topic.slice(h.parent.length)} ${m.payload}`);
    assert.equal(sent.length, 2, `only db's two sums were sent: ${sent.join(", ")}`);
    assert.ok(
      ofAssets().every((m) => m.topic === topic("db", "power")),
      sent.join(", "),
    );
  });

  it("a figure moved at one PDU's poll just after the other's publish: sent within about one interval though nothing moves again", async () => {
    const db = await asset("db");
    const [a, b] = db.readings.map((r) => r.power!);
    await polls(2);
    h.mqtt.clear();
    // a1's move is sent at its poll; b1's, moved at once, comes at b1's next poll, which may be
    // held back (the figures were just sent) and must still go out with nothing moving after.
    h.sims.a1.setMeasurementRaw(devA, 0, "realPower", String(a! + 5));
    await h.mqtt.waitFor(topic("db", "power"), (m) => near(m.payload, a! + 5 + b!));
    h.sims.b1.setMeasurementRaw(devB, 0, "realPower", String(b! + 3));
    await h.mqtt.waitFor(topic("db", "power"), (m) => near(m.payload, a! + 5 + b! + 3));
    await polls(2);
    const sent = h.mqtt.on(topic("db", "power")).map((m) => m.payload);
    assert.equal(sent.length, 2, `each sum once: ${sent.join(", ")}`);
  });

  it("a cord switched off at its PDU: the state sent at once, the redundancy after two polls, and back", async () => {
    h.mqtt.clear();
    h.sims.b1.setOutletState(devB, 1, "off");
    await h.mqtt.waitFor(topic("web", "state"), (m) => m.payload === "partial");
    await h.mqtt.waitFor(topic("web", "redundancy"), (m) => m.payload === "lost");
    const webA = (await asset("web")).readings[0]!.power!;
    assert.ok(
      h.mqtt.on(topic("web", "power")).some((m) => near(m.payload, webA)),
      "the sum of the live cord alone",
    );
    h.sims.b1.setOutletState(devB, 1, "on");
    await h.mqtt.waitFor(topic("web", "state"), (m) => m.payload === "on");
    await h.mqtt.waitFor(topic("web", "redundancy"), (m) => m.payload === "ok");
    for (const level of ["state", "redundancy"]) {
      const payloads = h.mqtt.on(topic("web", level)).map((m) => m.payload);
      assert.deepEqual(
        payloads,
        [...new Set(payloads)],
        `web ${level}: each value once: ${payloads.join(", ")}`,
      );
    }
    assert.deepEqual(h.mqtt.on(topic("db", "state")), [], "db did not move");
  });

  it("mosquitto restarted without its retained messages: every asset topic retained again", async () => {
    const expected = new Map<string, string>();
    for (const id of ["db", "web"]) {
      const a = await asset(id);
      expected.set(topic(id, "state"), a.state);
      expected.set(topic(id, "redundancy"), a.redundancy);
      expected.set(topic(id, "power"), String(a.power));
    }
    await mosquitto.restart();
    const fresh = await retainedAgain(rig, [...expected.keys()]);
    try {
      for (const [t, payload] of expected) {
        const m = fresh.last(t)!;
        assert.equal(m.retain, true, `${t} retained`);
        if (t.endsWith("/power")) assert.ok(near(m.payload, Number(payload)), `${t}: ${m.payload}`);
        else assert.equal(m.payload, payload, t);
      }
    } finally {
      await fresh.close();
    }
  });
});
