/** Configurations for the MQTT tests, built as YAML and read by the real configuration loader. */
import { parseConfigText } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";

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
  const q = (s: string) => JSON.stringify(s);
  const lines = ["Mqtt:", "  Connection:"];
  if (options.broker !== undefined) {
    lines.push(
      `    Host: ${q(options.broker.host)}`,
      `    Port: ${options.broker.port}`,
      `    Scheme: ${options.scheme ?? "mqtt"}`,
    );
    if (options.validateCertificate !== undefined) {
      lines.push(`    ValidateCertificate: ${options.validateCertificate}`);
    }
    if (options.caFile !== undefined) lines.push(`    CaFile: ${q(options.caFile)}`);
  }
  lines.push(`    ProtocolVersion: ${options.protocolVersion ?? 4}`);
  if (options.username !== undefined || options.password !== undefined) {
    lines.push("  Credentials:");
    if (options.username !== undefined) lines.push(`    Username: ${q(options.username)}`);
    if (options.password !== undefined) lines.push(`    Password: ${q(options.password)}`);
  }
  lines.push(
    `  ClientId: ${q(options.clientId ?? `pdu-bridge-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`)}`,
    `  ParentTopic: ${q(options.parentTopic ?? "pdu-bridge")}`,
    `  KeepAlive: ${options.keepAlive ?? 60}`,
    ...(options.maxPacketSize === undefined ? [] : [`  MaxPacketSize: ${options.maxPacketSize}`]),
    `  Embedded: { Bind: 127.0.0.1, Port: 0${
      options.embeddedMaxPacketSize === undefined ? "" : `, MaxPacketSize: ${options.embeddedMaxPacketSize}`
    } }`,
    "Pdus:",
  );
  let n = 10;
  for (const [id, actions] of Object.entries(options.instances)) {
    lines.push(
      `  ${id}:`,
      `    Connection: { Host: 192.0.2.${n++}, Port: 80 }`,
      "    PollInterval: 1",
      `    ActionsEnabled: ${actions}`,
      ...(actions ? ["    Credentials: { Username: admin, Password: pdu-secret }"] : []),
    );
  }
  lines.push(
    "HomeAssistant:",
    `  DiscoveryEnabled: ${options.discoveryEnabled ?? true}`,
    `  DiscoveryTopic: ${q(options.discoveryTopic ?? "homeassistant")}`,
    `  SensorExpireAfterSeconds: ${options.expireAfter ?? 300}`,
    "Health: { Enabled: false }",
  );
  return parseConfigText(`${lines.join("\n")}\n`, "mqtt-test.yaml", {});
}
