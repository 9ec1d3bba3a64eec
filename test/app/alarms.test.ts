/**
 * Loads and alarms end to end: the whole service polling the Geist simulator (which reports no
 * ratings, so `Pdus.<id>.Ratings` gives them), a breaker driven over 80 % and 95 % of its 16 A and
 * back. Each step is checked on every surface: the retained `load` topic and `alarms` list and the
 * `events` over MQTT, `GET /api/v1/alarms`, `pdu_entity_load_ratio` and `pdu_alarm_active` in
 * /metrics, and the Home Assistant discovery (problem binary sensors, load sensors, the event
 * entity) checked against Home Assistant's own rules. A PDU-reported alarm (the simulator's
 * entity alarm) and the alarms of a hidden breaker are checked too.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { haDiscoveryProblems } from "../../testkit/ha-mqtt-rules.js";
import type { Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";

type Json = Record<string, unknown>;

interface RestAlarm {
  readonly instanceId: string;
  readonly id: string;
  readonly target: Json;
  readonly severity: string;
  readonly source: string;
  readonly percent: number | null;
  readonly reported: string | null;
  readonly stale: boolean;
}

describe("alarms: a breaker over 80 % and 95 % of its rating and back, on every surface", () => {
  let h: AppHarness<"rack">;
  let ha: Recorder;
  let deviceId: string;
  let load: string;
  let alarmsTopic: string;
  let events: string;

  before(async () => {
    h = await startAppHarness<"rack">({
      sims: { rack: { outlets: 4, seed: 7 } },
      yaml: (s) =>
        appYaml({
          pdus: [
            pduYaml("rack", s.rack, { pollInterval: 1 }),
            "    Ratings: { Breakers: 16, Phases: 32 }",
            "    Overrides:",
            `      Entities: { "${s.rack.deviceIds()[0]!}": { breaker1: { Hidden: true } } }`,
          ],
          api: { key: "" },
        }),
    });
    deviceId = h.sims.rack.deviceIds()[0]!;
    load = `${h.parent}/rack/${deviceId}/entity/breaker0/load`;
    alarmsTopic = `${h.parent}/rack/alarms`;
    events = `${h.parent}/rack/events`;
    ha = await h.subscribe(["homeassistant/#"]);
    await h.waitForPoll("rack");
  });
  after(() => h?.close());

  /** Sets the breaker's current and waits for the poll after it to be published. */
  const drive = async (amps: number, state: string) => {
    h.sims.rack.setEntityCurrent(deviceId, "breaker0", amps);
    const percent = Math.round((amps / 16) * 100);
    await h.mqtt.waitFor(load, (m) => m.payload === JSON.stringify({ percent, state }), 10_000);
    return percent;
  };
  const restAlarms = async () => (await h.api.get("/api/v1/alarms")).json<RestAlarm[]>();
  const metric = async (pattern: RegExp) => pattern.exec((await h.health.get("/metrics")).text)?.[1];
  const eventLog = () =>
    h.mqtt.on(events).map((m) => {
      const e = JSON.parse(m.payload) as Json;
      assert.equal(m.retain, false, "events are not retained");
      return `${String(e.event_type)} ${String(e.severity)} ${String(e.id)}`;
    });

  it("steps: normal, warning at 82.5 %, warning at 78 % (hysteresis), critical, warning at 88 %, cleared at 70 %", async () => {
    const id = `${deviceId}/entity/breaker0/load`;
    await drive(8, "normal");
    assert.deepEqual(await restAlarms(), []);
    assert.equal(h.mqtt.last(alarmsTopic)?.payload, "[]");
    const late = await h.subscribe([alarmsTopic]);
    assert.deepEqual(
      await late.waitFor(alarmsTopic).then((m) => [m.retain, m.payload]),
      [true, "[]"],
      "the list is retained",
    );

    await drive(13.2, "warning");
    const [warning] = await restAlarms();
    assert.deepEqual(
      [warning?.id, warning?.severity, warning?.source, warning?.percent, warning?.stale, warning?.target],
      [id, "warning", "load", 83, false, { kind: "entity", key: "breaker0" }],
    );
    const list = JSON.parse(h.mqtt.last(alarmsTopic)?.payload ?? "[]") as Json[];
    assert.deepEqual(
      list.map((a) => [a.id, a.severity, a.percent]),
      [[id, "warning", 83]],
    );
    assert.equal(
      await metric(
        new RegExp(
          `pdu_entity_load_ratio\\{instance="rack",device="${deviceId}",entity="breaker0"\\} (\\S+)`,
        ),
      ),
      String(13.2 / 16),
    );
    assert.equal(
      await metric(
        new RegExp(
          `pdu_alarm_active\\{instance="rack",device="${deviceId}",entity="breaker0",source="load",severity="warning"\\} (\\S+)`,
        ),
      ),
      "1",
    );

    await drive(12.5, "warning"); // 78 %: not yet 5 points under the line
    await drive(15.5, "critical");
    assert.equal((await restAlarms())[0]?.severity, "critical");
    await drive(14.6, "critical"); // 91 %: stays critical
    await drive(14.1, "warning"); // 88 %
    await drive(11.2, "normal"); // 70 %: cleared
    assert.deepEqual(await restAlarms(), []);
    assert.equal(h.mqtt.last(alarmsTopic)?.payload, "[]");
    const text = (await h.health.get("/metrics")).text;
    assert.doesNotMatch(text, /^pdu_alarm_active\{/m, "a cleared alarm leaves the exposition");
    assert.match(text, /^# TYPE pdu_alarm_active gauge$/m);
    assert.deepEqual(eventLog(), [
      `raised warning ${id}`,
      `changed critical ${id}`,
      `changed warning ${id}`,
      `cleared warning ${id}`,
    ]);
  });

  it("Home Assistant: problem sensors per phase, breaker and PDU, load sensors, an event entity; all within Home Assistant's rules", async () => {
    const node = "pdu-bridge_rack";
    const want = [
      `homeassistant/binary_sensor/${node}/device_${deviceId}_problem/config`,
      `homeassistant/event/${node}/device_${deviceId}_alarm-events/config`,
      `homeassistant/binary_sensor/${node}/entity_${deviceId}_breaker0_load-problem/config`,
      `homeassistant/binary_sensor/${node}/entity_${deviceId}_phase0_load-problem/config`,
      `homeassistant/sensor/${node}/entity_${deviceId}_breaker0_load-percent/config`,
      `homeassistant/sensor/${node}/entity_${deviceId}_phase0_load-percent/config`,
    ];
    for (const topic of want) await ha.waitFor(topic);
    const hidden = [...ha.latest("homeassistant/").keys()].filter((t) => t.includes("breaker1"));
    assert.deepEqual(hidden, [], "the hidden breaker has no entities");
    for (const [topic, m] of ha.latest("homeassistant/")) {
      if (m.payload === "") continue;
      const component = topic.split("/")[1]!;
      if (!["sensor", "binary_sensor", "event"].includes(component)) continue;
      assert.deepEqual(haDiscoveryProblems(component, JSON.parse(m.payload) as Json), [], topic);
    }
    const problem = JSON.parse(ha.last(want[2]!)!.payload) as Json;
    assert.equal(problem.state_topic, load);
    assert.equal(problem.device_class, "problem");
    const percent = JSON.parse(ha.last(want[4]!)!.payload) as Json;
    assert.deepEqual([percent.unit_of_measurement, percent.state_class], ["%", "measurement"]);
    const event = JSON.parse(ha.last(want[1]!)!.payload) as Json;
    assert.deepEqual(event.event_types, ["raised", "changed", "cleared", "folded", "trap"]);
    assert.equal(event.state_topic, events);
  });

  it("a PDU-reported alarm counts by its severity; a hidden breaker's alarm is on REST only (hidden: true)", async () => {
    h.sims.rack.setAlarm(deviceId, "phase0", { state: "alarm", severity: "warning" });
    h.sims.rack.setEntityCurrent(deviceId, "breaker1", 15.8);
    await waitFor(async () => (await restAlarms()).length === 2, "two alarms", 10_000);
    const alarms = await restAlarms();
    assert.deepEqual(
      alarms.map((a) => [a.id, a.severity, a.source, a.reported]),
      [
        [`${deviceId}/entity/breaker1/load`, "critical", "load", null],
        [`${deviceId}/entity/phase0/pdu`, "warning", "pdu", "alarm"],
      ],
    );
    assert.equal((alarms[0] as unknown as Json).hidden, true);
    await h.mqtt.waitFor(alarmsTopic, (m) => m.payload.includes("phase0/pdu"), 10_000);
    assert.doesNotMatch(h.mqtt.last(alarmsTopic)!.payload, /breaker1/, "hidden: not on MQTT");
    assert.equal(h.mqtt.on(`${h.parent}/rack/${deviceId}/entity/breaker1/load`).length, 0);
    assert.ok(!eventLog().some((e) => e.includes("breaker1")), "no event of a hidden thing");
    // The phase's load topic says warning too, and keeps it for a newcomer (retained).
    const phaseLoad = `${h.parent}/rack/${deviceId}/entity/phase0/load`;
    await h.mqtt.waitFor(phaseLoad, (m) => (JSON.parse(m.payload) as Json).state === "warning");
    const late = await h.subscribe([phaseLoad]);
    const kept = await late.waitFor(phaseLoad);
    assert.deepEqual([kept.retain, (JSON.parse(kept.payload) as Json).state], [true, "warning"]);
    h.sims.rack.setAlarm(deviceId, "phase0", null);
    h.sims.rack.setEntityCurrent(deviceId, "breaker1", null);
    await waitFor(async () => (await restAlarms()).length === 0, "cleared", 10_000);
  });

  it("a failing instance keeps its alarms, marked stale, and leaves /metrics", async () => {
    h.sims.rack.setEntityCurrent(deviceId, "breaker0", 15.6);
    await waitFor(async () => (await restAlarms()).length === 1, "critical again", 10_000);
    await h.sims.rack.close(); // the PDU stops answering (last test: the harness closes it again)
    await waitFor(async () => (await restAlarms())[0]?.stale === true, "stale", 15_000);
    assert.equal((await restAlarms())[0]?.severity, "critical");
    assert.doesNotMatch((await h.health.get("/metrics")).text, /^pdu_alarm_active\{/m);
  });
});
