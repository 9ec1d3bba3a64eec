/**
 * The retained alarms list when it does not fit in one MQTT packet: with the embedded broker (its
 * Embedded.MaxPacketSize) and with mosquitto (`message_size_limit`, the bridge told by
 * Mqtt.MaxPacketSize), a PDU raising far more alarms than fit leaves a bounded list on
 * `P/<instance>/alarms` (the most severe first) with a count of what is left out on
 * `P/<instance>/alarms/omitted`, never the list of an earlier poll; once they fit again, the full
 * list and an omitted count of 0.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Simulator } from "../../src/simulator/index.js";
import { pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";

const OUTLETS = 128;
const LIMIT = 16_384;

/** Alarms on outlets 0 to n-1 of the first device (and none on the others). */
function alarmOutlets(sim: Simulator, n: number): void {
  const dev = sim.deviceIds()[0]!;
  for (let i = 0; i < OUTLETS; i += 1) {
    sim.setAlarm(dev, i, i < n ? { state: "alarm", severity: i % 2 === 0 ? "critical" : "warning" } : null);
  }
}

/** The retained list and omitted count a subscriber that comes now is given. */
async function retained(
  broker: { host: string; port: number },
  parent: string,
): Promise<{ list: { id: string; severity: string }[]; omitted: string | null }> {
  const late = await Recorder.connect(broker, [`${parent}/lab/alarms`, `${parent}/lab/alarms/omitted`]);
  try {
    const m = await late.waitFor(`${parent}/lab/alarms`);
    await waitFor(() => late.on(`${parent}/lab/alarms/omitted`).length > 0, "the omitted count", 2000).catch(
      () => undefined,
    );
    const omitted = late.on(`${parent}/lab/alarms/omitted`)[0]?.payload ?? null;
    return { list: JSON.parse(m.payload) as { id: string; severity: string }[], omitted };
  } finally {
    await late.close();
  }
}

function suite(kind: "embedded" | "mosquitto"): void {
  describe(`the retained alarms list over its packet limit (${kind} broker)`, () => {
    let h: AppHarness<"rack">;
    let mosquitto: Mosquitto | null = null;

    before(async () => {
      if (kind === "mosquitto")
        mosquitto = await Mosquitto.start({ extra: [`message_size_limit ${LIMIT - 200}`] });
      h = await startAppHarness<"rack">({
        sims: { rack: { outlets: OUTLETS } },
        yaml: (s) =>
          [
            "Mqtt:",
            mosquitto === null
              ? `  Embedded: { Bind: 127.0.0.1, Port: 0, MaxPacketSize: ${LIMIT} }`
              : `  Connection: { Host: 127.0.0.1, Port: ${mosquitto.port}, Scheme: mqtt }\n  MaxPacketSize: ${LIMIT - 200}`,
            "  ParentTopic: alarm-bound",
            "Pdus:",
            pduYaml("lab", s.rack, { pollInterval: 1 }),
            "Health: { Enabled: false }",
          ].join("\n") + "\n",
        subscribeAll: false,
        waitForFirstPolls: true,
      });
    });
    after(async () => {
      await h?.close();
      await mosquitto?.close();
    });

    it("a list that fits is retained whole, with nothing omitted", async () => {
      alarmOutlets(h.sims.rack, 10);
      const got = await waitFor(async () => {
        const r = await retained(h.broker, h.parent);
        return r.list.length === 10 ? r : null;
      }, "the list of 10 alarms");
      assert.ok(got.omitted === null || got.omitted === "0", `omitted ${got.omitted}`);
    });

    it("a list over the limit is replaced by a bounded one with the count left out, never left stale", async () => {
      alarmOutlets(h.sims.rack, OUTLETS);
      const got = await waitFor(
        async () => {
          const r = await retained(h.broker, h.parent);
          return r.list.length !== 10 && r.omitted !== null && r.omitted !== "0" ? r : null;
        },
        "a bounded list and its omitted count",
        20_000,
      );
      assert.ok(got.list.length > 0, "the list is not empty");
      assert.equal(got.list.length + Number(got.omitted), OUTLETS, "shown + omitted = active");
      assert.ok(Buffer.byteLength(JSON.stringify(got.list)) < LIMIT, "the list fits");
      const severities = got.list.map((a) => a.severity);
      assert.ok(
        severities.every((s) => s === "critical"),
        "the most severe come first",
      );
    });

    it("once the alarms fit again, the whole list and an omitted count of 0", async () => {
      alarmOutlets(h.sims.rack, 5);
      const got = await waitFor(
        async () => {
          const r = await retained(h.broker, h.parent);
          return r.list.length === 5 ? r : null;
        },
        "the list of 5 alarms",
        20_000,
      );
      assert.equal(got.omitted, "0");
    });
  });
}

suite("embedded");
suite("mosquitto");
