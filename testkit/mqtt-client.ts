/** Test helpers around a real mqtt.js client: a recording subscriber. */
import { connectAsync, type MqttClient } from "mqtt";
import { waitFor } from "./wait.js";

export interface Received {
  readonly topic: string;
  readonly payload: string;
  /** True for a retained message delivered because of the subscription. */
  readonly retain: boolean;
  readonly qos: number;
  readonly at: number;
}

export { sleep, waitFor } from "./wait.js";

export class Recorder {
  readonly client: MqttClient;
  readonly messages: Received[] = [];

  private constructor(client: MqttClient) {
    this.client = client;
    client.on("message", (topic, payload, packet) => {
      this.messages.push({
        topic,
        payload: payload.toString("utf8"),
        retain: packet.retain,
        qos: packet.qos,
        at: Date.now(),
      });
    });
  }

  /** Connects to the broker and subscribes (QoS 1) before returning. */
  static async connect(
    broker: { readonly host: string; readonly port: number },
    topics: readonly string[],
    options: { protocolVersion?: 4 | 5; username?: string; password?: string } = {},
  ): Promise<Recorder> {
    const client = await connectAsync({
      host: broker.host,
      port: broker.port,
      protocol: "mqtt",
      protocolVersion: options.protocolVersion ?? 4,
      clientId: `recorder-${Math.random().toString(36).slice(2, 10)}`,
      reconnectPeriod: 0,
      ...(options.username === undefined ? {} : { username: options.username }),
      ...(options.password === undefined ? {} : { password: options.password }),
    });
    const recorder = new Recorder(client);
    if (topics.length > 0) await client.subscribeAsync([...topics], { qos: 1 });
    return recorder;
  }

  /** Messages on exactly this topic, oldest first. */
  on(topic: string): Received[] {
    return this.messages.filter((m) => m.topic === topic);
  }

  last(topic: string): Received | undefined {
    return this.on(topic).at(-1);
  }

  /** Latest payload per topic, for topics starting with `prefix`. */
  latest(prefix = ""): Map<string, Received> {
    const map = new Map<string, Received>();
    for (const m of this.messages) if (m.topic.startsWith(prefix)) map.set(m.topic, m);
    return map;
  }

  waitFor(
    topic: string,
    predicate: (m: Received) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<Received> {
    return waitFor(
      () => this.messages.find((m) => m.topic === topic && predicate(m)),
      `a message on ${topic}`,
      timeoutMs,
    );
  }

  clear(): void {
    this.messages.length = 0;
  }

  publish(topic: string, payload: string | Buffer, retain = false): Promise<unknown> {
    return this.client.publishAsync(topic, payload, { qos: 1, retain });
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}
