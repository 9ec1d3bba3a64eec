/**
 * One definition of "alarm raised": the parser's `Alarm.raised` and the Home Assistant alarm
 * template must agree on every state a PDU may send. The template is evaluated here the way Home
 * Assistant's Jinja does for this one expression: `value | trim | lower` tested against its list.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ALARM_TEMPLATE } from "../../src/mqtt/discovery.js";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import { isAlarmRaised, RAISED_ALARM_STATES } from "../../src/pdu/model.js";
import { wireApi, type Json } from "../../testkit/fixtures/wire.js";

/** Evaluates `{{ 'ON' if (value | trim | lower) in [...] else 'OFF' }}` for one payload. */
function evaluateTemplate(template: string, value: string): "ON" | "OFF" {
  const m = /^\{\{ 'ON' if \(value \| trim \| lower\) in \[((?:'[a-z]+'(?:, )?)*)\] else 'OFF' \}\}$/.exec(
    template,
  );
  assert.ok(m, `the template has the expected form: ${template}`);
  const list = [...(m[1] ?? "").matchAll(/'([a-z]+)'/g)].map((x) => x[1]);
  return list.includes(value.trim().toLowerCase()) ? "ON" : "OFF";
}

const STATES = [
  "none",
  "",
  " ",
  "alarm",
  "Alarm",
  "ACTIVE",
  " active ",
  "warning",
  "normal",
  "cleared",
  "alarmed",
];

describe("one definition of alarm raised", () => {
  it("the template lists exactly RAISED_ALARM_STATES", () => {
    assert.deepEqual(RAISED_ALARM_STATES.slice(0, 2), ["alarm", "active"]);
    for (const s of RAISED_ALARM_STATES) assert.equal(s, s.toLowerCase());
    for (const s of RAISED_ALARM_STATES) assert.equal(evaluateTemplate(ALARM_TEMPLATE, s), "ON");
  });

  for (const state of STATES) {
    it(`parser and Home Assistant agree on ${JSON.stringify(state)}`, () => {
      const tree = wireApi();
      const device = (tree.dev as Record<string, Json>).A0AE260C851900C3 as Json;
      device.alarm = { state, severity: "alarm" };
      const alarm = parseApiTree(tree, "x", 1).devices[0]?.alarm;
      assert.ok(alarm);
      assert.equal(alarm.raised, isAlarmRaised(state));
      // What the publisher sends on the alarm topic: the state, "none" when blank.
      const payload = alarm.state;
      assert.equal(evaluateTemplate(ALARM_TEMPLATE, payload) === "ON", alarm.raised);
    });
  }
});
