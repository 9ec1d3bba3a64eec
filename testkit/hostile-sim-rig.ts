/**
 * A hostile PDU beside a healthy one in the real service, for the tests of what a PDU answers
 * (test/faults/hostile-pdu*.test.ts): two simulators (`good` and `bad`, the hostile one switched to
 * the simulator's hostile answer modes by the test), a spawned mosquitto or the bridge's embedded
 * broker, the CLI as a child process (testkit/faults-harness.ts) polling both every second, and a
 * subscriber to the healthy PDU's topics. Also the checks those tests share: the healthy PDU
 * unaffected, and the bridge's resident memory while the hostile PDU misbehaves.
 */
import assert from "node:assert/strict";
import { startSimulator, type Simulator, type SimulatorOptions } from "../src/simulator/index.js";
import { BridgeProcess, pollCount, until } from "./faults-harness.js";
import { Mosquitto } from "./mosquitto.js";
import { Recorder } from "./mqtt-client.js";
import { freePort } from "./repo.js";
import { RssSampler, rssBytes } from "./rss.js";

export type BrokerKind = "mosquitto" | "embedded";

export interface HostileSimRigOptions {
  readonly brokerKind: BrokerKind;
  readonly parentTopic: string;
  /** The simulators of the healthy and the hostile PDU. */
  readonly good: SimulatorOptions;
  readonly bad: SimulatorOptions;
  /** Seconds per request to the hostile PDU (default: faults-harness's). */
  readonly badTimeout?: number;
  /** The bridge process's name in failure messages. */
  readonly name: string;
}

/** The bridge's resident memory over a hostile spell: at its start, and the largest sample since. */
export interface RssGrowth {
  readonly base: number;
  readonly peak: number;
  readonly samples: number;
}

export class HostileSimRig {
  readonly good: Simulator;
  readonly bad: Simulator;
  /** The first device of the healthy PDU. */
  readonly goodDevice: string;
  readonly mosquitto: Mosquitto | null;
  readonly bridge: BridgeProcess;
  /** Subscribed to `<parent>/good/#`. */
  readonly watcher: Recorder;
  readonly #parent: string;

  private constructor(
    parts: Pick<HostileSimRig, "good" | "bad" | "mosquitto" | "bridge" | "watcher">,
    parent: string,
  ) {
    this.good = parts.good;
    this.bad = parts.bad;
    this.goodDevice = parts.good.deviceIds()[0]!;
    this.mosquitto = parts.mosquitto;
    this.bridge = parts.bridge;
    this.watcher = parts.watcher;
    this.#parent = parent;
  }

  /** Starts everything and waits for a first good poll of both PDUs and `/readyz` READY. */
  static async start(o: HostileSimRigOptions): Promise<HostileSimRig> {
    let good: Simulator | null = null;
    let bad: Simulator | null = null;
    let mosquitto: Mosquitto | null = null;
    let bridge: BridgeProcess | null = null;
    let watcher: Recorder | null = null;
    try {
      good = await startSimulator(o.good);
      bad = await startSimulator(o.bad);
      mosquitto = o.brokerKind === "mosquitto" ? await Mosquitto.start() : null;
      const broker = mosquitto ?? { host: "127.0.0.1", port: await freePort() };
      const started = await BridgeProcess.start(
        {
          broker,
          embedded: mosquitto === null,
          parentTopic: o.parentTopic,
          pdus: [
            { id: "good", sim: good, pollInterval: 1 },
            {
              id: "bad",
              sim: bad,
              pollInterval: 1,
              ...(o.badTimeout === undefined ? {} : { timeout: o.badTimeout }),
            },
          ],
        },
        o.name,
      );
      bridge = started;
      await started.waitPolled(["good", "bad"]);
      watcher = await Recorder.connect(broker, [`${o.parentTopic}/good/#`]);
      await until(async () => (await started.readyz()).status === 200, "READY", 15_000);
      return new HostileSimRig({ good, bad, mosquitto, bridge, watcher }, o.parentTopic);
    } catch (error) {
      await watcher?.close();
      await bridge?.close();
      await mosquitto?.close();
      await good?.close();
      await bad?.close();
      throw error;
    }
  }

  /** Waits until the hostile PDU has answered `n` more polls. */
  async polls(n: number): Promise<void> {
    const start = pollCount(this.bad);
    await until(() => pollCount(this.bad) >= start + n, `${n} polls of the hostile PDU`, 30_000);
  }

  /**
   * The healthy PDU still polled and published (a measurement newer than `since`, epoch ms) without
   * an error, the bridge READY, never reconnected to MQTT, and running.
   */
  async healthyAlongside(since = Date.now()): Promise<void> {
    const measurement = `${this.#parent}/good/${this.goodDevice}/outlets/0/measurements/realPower`;
    await until(
      () => this.watcher.on(measurement).some((m) => m.at > since),
      "a new measurement of the healthy PDU",
      15_000,
    );
    assert.equal((await this.bridge.instanceHealth("good")).lastError, null);
    const ready = await this.bridge.readyz();
    assert.equal(ready.status, 200, ready.text);
    const connects = this.bridge.logLines().filter((l) => l.msg === "connected to MQTT broker").length;
    assert.equal(connects, 1, "the bridge never reconnected to MQTT");
    assert.equal(this.bridge.cli.exit, null, "the bridge is running");
  }

  /**
   * Runs `spell` (which switches the hostile PDU's faults on) while sampling the bridge's resident
   * memory, then switches the faults off, whatever the spell's outcome.
   */
  async hostileSpell(spell: () => Promise<void>): Promise<RssGrowth> {
    const pid = this.bridge.cli.child.pid!;
    const base = rssBytes(pid)!;
    const sampler = new RssSampler(pid);
    try {
      await spell();
    } finally {
      sampler.stop();
      await this.bad.setFault(null);
    }
    return { base, peak: sampler.peak, samples: sampler.samples };
  }

  /** Waits until the hostile PDU, its faults off, is polled without an error again. */
  async badAnsweringWell(): Promise<void> {
    await until(
      async () => (await this.bridge.instanceHealth("bad")).lastError === null,
      "the PDU answering well again",
      15_000,
    );
  }

  async close(): Promise<void> {
    await this.watcher.close();
    await this.bridge.close();
    await this.mosquitto?.close();
    await this.good.close();
    await this.bad.close();
  }
}
