/**
 * The load topics and the alarms list (src/mqtt/alarms.ts) as a broker keeps them: whatever
 * sequence of reports a tracker makes, published one after the other or with some never published
 * (the connection was down), the retained topics end as a fresh publisher would leave them from the
 * last report alone: every shown load with its payload, a thing gone or hidden cleared, the list
 * as it is. And a report that changed nothing publishes nothing.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { silentLogger } from "../../src/log.js";
import { AlarmTopics } from "../../src/mqtt/alarms.js";
import { TopicIdGuard, Topics } from "../../src/mqtt/topics.js";
import type { Sink } from "../../src/mqtt/types.js";
import { DEFAULT_THRESHOLDS, LoadTracker } from "../../src/pdu/load.js";
import type { Entity, LoadReport, Snapshot } from "../../src/pdu/model.js";
import { CLEAR_ALARM, device, measurement, outlet, snapshot } from "../../testkit/snapshot-builders.js";

/** What a broker keeps: the last retained payload of each topic (an empty one clears it). */
class RetainedSink implements Sink {
  readonly connected = true;
  readonly congested = false;
  readonly retained = new Map<string, string>();
  published = 0;
  /** The QoS of each message, in order, as `topic qos payload`. */
  readonly sent: string[] = [];

  publish(topic: string, payload: string, qos: 0 | 1, retain: boolean): boolean {
    this.published++;
    this.sent.push(`${topic} ${qos} ${payload}`);
    if (!retain) return true;
    if (payload === "") this.retained.delete(topic);
    else this.retained.set(topic, payload);
    return true;
  }

  onceUncongested(callback: () => void): void {
    callback();
  }

  fits(): boolean {
    return true;
  }
}

const topics = new Topics("pdu-bridge");
const guard = new TopicIdGuard(silentLogger());

function breaker(key: string, amps: number, extra: Partial<Entity> = {}): Entity {
  return {
    key,
    name: key,
    label: "",
    displayName: key,
    alarm: CLEAR_ALARM,
    measurements: [measurement("current", amps, "A")],
    ...extra,
  };
}

function unit(breakers: readonly Entity[], at: number): Snapshot {
  const base = device({ id: "DEV1", outlets: [outlet(0, { current: 0.5 })] });
  return snapshot("rack", [{ ...base, entities: [...base.entities, ...breakers] }], [], at);
}

/** The retained topics a fresh publisher leaves from `report` alone. */
function fresh(report: LoadReport): ReadonlyMap<string, string> {
  const sink = new RetainedSink();
  new AlarmTopics(sink, topics, guard).publish("rack", report, [], false);
  return sink.retained;
}

describe("load topics and the alarms list", () => {
  it("property: the retained topics are always the last report's, published or not in between", () => {
    const amps = fc.oneof(
      fc.constantFrom(12.74, 12.8, 15.15, 15.2, 8),
      fc.double({ min: 0, max: 20, noNaN: true }),
    );
    const step = fc.record({
      amps: fc.array(fc.oneof(fc.constant(null), amps), { minLength: 3, maxLength: 3 }),
      hidden: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      published: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 15 }), (steps) => {
        const tracker = new LoadTracker({ Breakers: 16 }, DEFAULT_THRESHOLDS);
        const sink = new RetainedSink();
        const alarms = new AlarmTopics(sink, topics, guard);
        steps.forEach(({ amps: list, hidden, published }, i) => {
          const breakers = list.flatMap((a, k) =>
            a === null ? [] : [breaker(`breaker${k}`, a, hidden[k] ? { hidden: true } : {})],
          );
          const { report, changes } = tracker.assess(unit(breakers, i + 1));
          if (!published && i < steps.length - 1) return;
          alarms.publish("rack", report, changes, false);
          assert.deepEqual(sink.retained, fresh(report));
        });
      }),
    );
  });

  it("a report that changed nothing publishes nothing; one point's move publishes that point", () => {
    const tracker = new LoadTracker({ Breakers: 16 }, DEFAULT_THRESHOLDS);
    const sink = new RetainedSink();
    const alarms = new AlarmTopics(sink, topics, guard);
    const publish = (amps: number, at: number) => {
      const { report, changes } = tracker.assess(
        unit([breaker("breaker0", amps), breaker("breaker1", 4)], at),
      );
      sink.published = 0;
      alarms.publish("rack", report, changes, false);
      return report;
    };
    publish(8, 1);
    const report = publish(8.01, 2);
    assert.equal(sink.published, 0, "8.01 A is 50 % as 8 A was");
    alarms.publish("rack", report, [], false);
    assert.equal(sink.published, 0, "the same report again");
    publish(9, 3);
    assert.equal(sink.published, 1);
    assert.equal(
      sink.retained.get(topics.entityLoad("rack", "DEV1", "breaker0")),
      '{"percent":56,"state":"normal"}',
    );
    sink.published = 0;
    alarms.publish("rack", report, [], true);
    assert.equal(sink.published, sink.retained.size, "forced: every retained topic again");
  });

  it("a load whose state holds goes at QoS 0; a first payload, a new state, a clear and a resync at QoS 1", () => {
    const tracker = new LoadTracker({ Breakers: 16 }, DEFAULT_THRESHOLDS);
    const sink = new RetainedSink();
    const alarms = new AlarmTopics(sink, topics, guard);
    const topic = topics.entityLoad("rack", "DEV1", "breaker0");
    const publish = (breakers: Entity[], at: number, force = false) => {
      const { report, changes } = tracker.assess(unit(breakers, at));
      alarms.publish("rack", report, changes, force);
    };
    const loads = () => sink.sent.filter((m) => m.startsWith(`${topic} `));
    publish([breaker("breaker0", 8)], 1);
    publish([breaker("breaker0", 9)], 2);
    publish([breaker("breaker0", 14)], 3);
    publish([breaker("breaker0", 14.2)], 4);
    publish([breaker("breaker0", 14.4)], 5, true);
    publish([], 6);
    assert.deepEqual(loads(), [
      `${topic} 1 {"percent":50,"state":"normal"}`,
      `${topic} 0 {"percent":56,"state":"normal"}`,
      `${topic} 1 {"percent":88,"state":"warning"}`,
      `${topic} 0 {"percent":89,"state":"warning"}`,
      `${topic} 1 {"percent":90,"state":"warning"}`,
      `${topic} 1 `,
    ]);
  });
});
