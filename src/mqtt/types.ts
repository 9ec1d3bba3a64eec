/** What the rest of the service may know about the MQTT side (src/mqtt knows nothing about HTTP). */

/** What the publisher and the alarm topics need of the connection. */
export interface Sink {
  readonly connected: boolean;
  publish(topic: string, payload: string, qos: 0 | 1, retain: boolean): boolean;
  /** True while so many QoS 1 messages wait for acknowledgement that bulk publishing should pause. */
  readonly congested: boolean;
  /** Runs `callback` once, when the connection is no longer congested or was lost. */
  onceUncongested(callback: () => void): void;
  /** Whether the message fits in one packet the broker takes (else `publish` would drop it). */
  fits(topic: string, payload: string, qos: 0 | 1): boolean;
}

export interface MqttStatus {
  readonly connected: boolean;
  /** Broker URL without credentials, e.g. `mqtt://127.0.0.1:1883`. */
  readonly broker: string;
  /** True when the service runs its own embedded broker. */
  readonly embedded: boolean;
  /** Last connection error, readable, or null. */
  readonly lastError: string | null;
  /** When the current connection state began (epoch ms), or null before the first attempt ended. */
  readonly since: number | null;
  /** Messages dropped because they could not be built or sent (an unsafe topic, a failed publish); absent while none. */
  readonly droppedMessages?: number;
}

export interface HomeAssistantStatus {
  readonly enabled: boolean;
  readonly discoveryTopic: string;
  /** When discovery was last published (epoch ms), or null. */
  readonly lastDiscoveryUtc: number | null;
}

export interface MqttBridgeHandle {
  status(): MqttStatus;
  homeAssistant(): HomeAssistantStatus;
  stop(): Promise<void>;
}
