/** Configurations for the MQTT tests, built as YAML and read by the real configuration loader. */
import { parseConfigText } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";
import { silentLogger, type Logger } from "../src/log.js";
import { MqttConnection } from "../src/mqtt/connection.js";
import { configYaml } from "./config-yaml.js";

export interface MqttTestConfig {
  /** An external broker; omitted: the embedded broker on 127.0.0.1, port 0. */
  readonly broker?: { readonly host: string; readonly port: number };
  /** Scheme of the external broker (default mqtt). */
  readonly scheme?: "mqtt" | "mqtts";
  readonly validateCertificate?: boolean;
  readonly caFile?: string;
  readonly protocolVersion?: 4 | 5;
  readonly username?: string;
  readonly password?: string;
  readonly clientId?: string;
  readonly parentTopic?: string;
  readonly discoveryTopic?: string;
  readonly discoveryEnabled?: boolean;
  readonly expireAfter?: number;
  readonly keepAlive?: number;
  /** `Mqtt.MaxPacketSize` (an external broker's limit). */
  readonly maxPacketSize?: number;
  /** `Mqtt.Embedded.MaxPacketSize`. */
  readonly embeddedMaxPacketSize?: number;
  /** instance id → ActionsEnabled (file order is kept). */
  readonly instances: Readonly<Record<string, boolean>>;
}

export async function mqttTestConfig(options: MqttTestConfig): Promise<Config> {
  const broker = options.broker;
  const credentials =
    options.username !== undefined || options.password !== undefined
      ? {
          Credentials: {
            ...(options.username === undefined ? {} : { Username: options.username }),
            ...(options.password === undefined ? {} : { Password: options.password }),
          },
        }
      : {};
  let n = 10;
  const text = configYaml({
    Mqtt: {
      Connection: {
        ...(broker === undefined
          ? {}
          : {
              Host: broker.host,
              Port: broker.port,
              Scheme: options.scheme ?? "mqtt",
              ...(options.validateCertificate === undefined
                ? {}
                : { ValidateCertificate: options.validateCertificate }),
              ...(options.caFile === undefined ? {} : { CaFile: options.caFile }),
            }),
        ProtocolVersion: options.protocolVersion ?? 4,
      },
      ...credentials,
      ClientId:
        options.clientId ?? `pdu-bridge-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
      ParentTopic: options.parentTopic ?? "pdu-bridge",
      KeepAlive: options.keepAlive ?? 60,
      ...(options.maxPacketSize === undefined ? {} : { MaxPacketSize: options.maxPacketSize }),
      Embedded: {
        Bind: "127.0.0.1",
        Port: 0,
        ...(options.embeddedMaxPacketSize === undefined
          ? {}
          : { MaxPacketSize: options.embeddedMaxPacketSize }),
      },
    },
    Pdus: Object.fromEntries(
      Object.entries(options.instances).map(([id, actions]) => [
        id,
        {
          Connection: { Host: `192.0.2.${n++}`, Port: 80 },
          PollInterval: 1,
          ActionsEnabled: actions,
          ...(actions ? { Credentials: { Username: "admin", Password: "pdu-secret" } } : {}),
        },
      ]),
    ),
    HomeAssistant: {
      DiscoveryEnabled: options.discoveryEnabled ?? true,
      DiscoveryTopic: options.discoveryTopic ?? "homeassistant",
      SensorExpireAfterSeconds: options.expireAfter ?? 300,
    },
    Health: { Enabled: false },
  });
  return parseConfigText(text, "mqtt-test.yaml", {});
}

/**
 * The bridge's own MQTT connection to `broker` with no subscriptions, for tests of what it
 * publishes: built from {@link mqttTestConfig} with `more` (no instance), connected.
 */
export async function openTestConnection(
  broker: { readonly host: string; readonly port: number },
  more: Omit<MqttTestConfig, "broker" | "instances"> = {},
  o: { readonly logger?: Logger; readonly onConnect?: () => void } = {},
): Promise<MqttConnection> {
  const config = await mqttTestConfig({
    ...more,
    broker: { host: broker.host, port: broker.port },
    instances: { default: false },
  });
  return MqttConnection.open({
    config: config.Mqtt,
    subscriptions: [],
    hooks: { onConnect: o.onConnect ?? (() => undefined), onMessage: () => undefined },
    logger: o.logger ?? silentLogger(),
  });
}
