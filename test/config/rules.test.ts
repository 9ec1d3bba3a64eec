/**
 * One case per configuration rule, each checked twice: through `loadConfigFile` (the key, line and
 * message of the ConfigError) and through the real CLI (`pdu-bridge check-config`: exit 2, the same
 * one-line message on stderr, no stack trace).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfigFile } from "../../src/config/load.js";

const MAIN = fileURLToPath(new URL("../../src/main.js", import.meta.url));

interface Case {
  readonly name: string;
  readonly yaml: string;
  /** The key the message must name ("" for the file as a whole). */
  readonly key: string;
  /** The line the message must give, where the rule has one. */
  readonly line?: number;
  /** Text the message must contain besides the key. */
  readonly says?: string;
  readonly env?: Record<string, string>;
}

const PDU = "Pdus:\n  rack-a:\n    Connection:\n      Host: 127.0.0.1\n";

const CASES: readonly Case[] = [
  { name: "YAML syntax error", yaml: "Pdus:\n  a: [1,\n", key: "", line: 3, says: "invalid YAML" },
  { name: "duplicate key", yaml: `${PDU}Api: {}\nApi: {}\n`, key: "", line: 6, says: "unique" },
  { name: "empty file", yaml: "# nothing here\n", key: "", says: "the file is empty" },
  { name: "top level is a list", yaml: "- Pdus\n", key: "", line: 1, says: "top level must be a mapping" },
  { name: "unknown section", yaml: `${PDU}mqtt: {}\n`, key: "mqtt", line: 5, says: "did you mean `Mqtt`?" },
  {
    name: "unknown instance key (typo)",
    yaml: `${PDU}    PolInterval: 3\n`,
    key: "Pdus.rack-a.PolInterval",
    line: 5,
    says: "unknown key, did you mean `PollInterval`?",
  },
  {
    name: "unknown nested key (nothing close)",
    yaml: `${PDU}      Colour: blue\n`,
    key: "Pdus.rack-a.Connection.Colour",
    line: 5,
    says: "expected one of Host, Port, Scheme",
  },
  {
    name: "wrong type",
    yaml: `${PDU}    PollInterval: fast\n`,
    key: "Pdus.rack-a.PollInterval",
    says: 'must be a number (got "fast")',
  },
  {
    name: "below minimum",
    yaml: `${PDU}    PollInterval: 0\n`,
    key: "Pdus.rack-a.PollInterval",
    line: 5,
    says: "must be >= 1 (got 0)",
  },
  {
    name: "port out of range",
    yaml: `Api:\n  Port: 70000\n${PDU}`,
    key: "Api.Port",
    line: 2,
    says: "must be <= 65535 (got 70000)",
  },
  {
    name: "not an integer",
    yaml: `Mqtt:\n  KeepAlive: 1.5\n${PDU}`,
    key: "Mqtt.KeepAlive",
    line: 2,
    says: "must be an integer",
  },
  {
    name: "enum value",
    yaml: `${PDU}      Scheme: ftp\n`,
    key: "Pdus.rack-a.Connection.Scheme",
    line: 5,
    says: 'must be one of http, https (got "ftp")',
  },
  {
    name: "union of literals",
    yaml: `Mqtt:\n  Connection:\n    Host: broker.lan\n    ProtocolVersion: 3\n${PDU}`,
    key: "Mqtt.Connection.ProtocolVersion",
    line: 4,
    says: "must be one of 4, 5",
  },
  {
    name: "section of the wrong type",
    yaml: `Logging: loud\n${PDU}`,
    key: "Logging",
    line: 1,
    says: "must be a mapping",
  },
  {
    name: "required key missing",
    yaml: "Pdus:\n  rack-a:\n    Connection:\n      Port: 80\n",
    key: "Pdus.rack-a.Connection.Host",
    line: 3,
    says: "is required",
  },
  {
    name: "wildcard in a topic",
    yaml: `Mqtt:\n  ParentTopic: pdu/#\n${PDU}`,
    key: "Mqtt.ParentTopic",
    line: 2,
    says: "must not contain the MQTT wildcards",
  },
  {
    name: "invalid instance id",
    yaml: "Pdus:\n  rack a:\n    Connection: { Host: x }\n",
    key: "Pdus.rack a",
    line: 2,
    says: "1-64 characters of A-Za-z0-9_-",
  },
  {
    name: "instance id too long",
    yaml: `Pdus:\n  ${"x".repeat(65)}:\n    Connection: { Host: x }\n`,
    key: `Pdus.${"x".repeat(65)}`,
    line: 2,
  },
  {
    name: "no instance (empty map)",
    yaml: "Pdus: {}\n",
    key: "Pdus",
    line: 1,
    says: "at least one PDU instance",
  },
  {
    name: "no instance (no Pdus)",
    yaml: "Logging: { Level: info }\n",
    key: "Pdus",
    says: "at least one PDU instance",
  },
  {
    name: "ids that collide after the variable mapping",
    yaml: `${PDU}  RACK_A:\n    Connection: { Host: y }\n`,
    key: "Pdus.RACK_A",
    line: 5,
    says: "collides with `rack-a`",
  },
  {
    name: "ids that differ only in case",
    yaml: `${PDU}  Rack-A:\n    Connection: { Host: y }\n`,
    key: "Pdus.Rack-A",
    line: 5,
    says: "collides with `rack-a`",
  },
  {
    name: "Api.Port equals Health.Port",
    yaml: `${PDU}Api:\n  Enabled: true\n  Port: 8081\n`,
    key: "Api.Port",
    line: 7,
    says: "also used by Health.Port",
  },
  {
    name: "Health.Port equals the embedded broker's port",
    yaml: `${PDU}Health:\n  Port: 1883\n`,
    key: "Health.Port",
    line: 6,
    says: "also used by Mqtt.Embedded.Port",
  },
  {
    name: "ActionsEnabled without credentials",
    yaml: `${PDU}    ActionsEnabled: true\n`,
    key: "Pdus.rack-a.Credentials",
    line: 5,
    says: "SERVICE_PDU_RACK_A_USERNAME",
  },
  {
    name: "ActionsEnabled with a user name only",
    yaml: `${PDU}    Credentials: { Username: admin }\n    ActionsEnabled: true\n`,
    key: "Pdus.rack-a.Credentials",
    line: 5,
  },
  {
    name: "MQTT 5 with the embedded broker",
    yaml: `Mqtt:\n  Connection:\n    ProtocolVersion: 5\n${PDU}`,
    key: "Mqtt.Connection.ProtocolVersion",
    line: 3,
    says: "3.1.1",
  },
  {
    name: "PDU CaFile missing",
    yaml: `${PDU}      CaFile: missing-ca.pem\n`,
    key: "Pdus.rack-a.Connection.CaFile",
    line: 5,
    says: "missing-ca.pem (no such file)",
  },
  {
    name: "MQTT CaFile is a directory",
    yaml: `Mqtt:\n  Connection:\n    Host: broker.lan\n    CaFile: /\n${PDU}`,
    key: "Mqtt.Connection.CaFile",
    line: 4,
    says: "cannot read /",
  },
  {
    name: "secret _FILE missing",
    yaml: PDU,
    env: { SERVICE_API_KEY_FILE: "/nonexistent/api-key" },
    key: "SERVICE_API_KEY_FILE",
    says: "cannot read /nonexistent/api-key",
  },
  {
    name: "API key of one character",
    yaml: `${PDU}Api: { ApiKey: k }\n`,
    key: "Api.ApiKey",
    line: 5,
    says: "at least 16 characters without whitespace, printable ASCII only (! to ~), and not one character repeated (got 1 characters)",
  },
  {
    name: "API key of 15 characters",
    yaml: `${PDU}Api:\n  ApiKey: "abcdefghijklmno"\n`,
    key: "Api.ApiKey",
    line: 6,
    says: "at least 16 characters",
  },
  {
    name: "API key that is a space (can never be sent)",
    yaml: `${PDU}Api: { ApiKey: " " }\n`,
    key: "Api.ApiKey",
    says: "with whitespace",
  },
  {
    name: "API key with whitespace inside",
    yaml: `${PDU}Api: { ApiKey: "0123456789 abcdefgh" }\n`,
    key: "Api.ApiKey",
    says: "with whitespace",
  },
  {
    name: "SERVICE_API_KEY too short",
    yaml: PDU,
    env: { SERVICE_API_KEY: "short" },
    key: "SERVICE_API_KEY",
    says: "at least 16 characters",
  },
  {
    name: "SERVICE_API_KEY with a tab",
    yaml: PDU,
    env: { SERVICE_API_KEY: "0123456789abcdef\tg" },
    key: "SERVICE_API_KEY",
    says: "with whitespace",
  },
  {
    name: "API key of one character repeated",
    yaml: `${PDU}Api:\n  ApiKey: "${"k".repeat(24)}"\n`,
    key: "Api.ApiKey",
    line: 6,
    says: "(got one character repeated 24 times)",
  },
  {
    name: "SERVICE_API_KEY of one character repeated",
    yaml: PDU,
    env: { SERVICE_API_KEY: "a".repeat(40) },
    key: "SERVICE_API_KEY",
    says: "not one character repeated (got one character repeated 40 times)",
  },
  {
    name: "SERVICE_API_KEY with a zero-width space",
    yaml: PDU,
    env: { SERVICE_API_KEY: "0123456789abcdef\u200bghij" },
    key: "SERVICE_API_KEY",
    says: "printable ASCII only (! to ~), and not one character repeated (got U+200B, which is not printable ASCII)",
  },
  {
    name: "API key with a letter outside ASCII",
    yaml: `${PDU}Api:\n  ApiKey: "0123456789abcdefé"\n`,
    key: "Api.ApiKey",
    says: "(got U+00E9, which is not printable ASCII)",
  },
  {
    name: "PDU Host written as a URL",
    yaml: "Pdus:\n  rack-a:\n    Connection:\n      Host: http://127.0.0.1:18181\n",
    key: "Pdus.rack-a.Connection.Host",
    line: 4,
    says:
      'must be a host name or an IP address alone (127.0.0.1), not a URL (got "http://127.0.0.1:18181"): ' +
      "the scheme (http) goes in Pdus.rack-a.Connection.Scheme (http or https), the port (18181) in Pdus.rack-a.Connection.Port",
  },
  {
    name: "PDU Host with a port",
    yaml: "Pdus:\n  rack-a:\n    Connection: { Host: 10.0.0.7:8080 }\n",
    key: "Pdus.rack-a.Connection.Host",
    says: 'without a port (got "10.0.0.7:8080"): write 10.0.0.7; the port (8080) goes in Pdus.rack-a.Connection.Port',
  },
  {
    name: "PDU Host with a path",
    yaml: "Pdus:\n  rack-a:\n    Connection: { Host: pdu.lan/api }\n",
    key: "Pdus.rack-a.Connection.Host",
    says: "without a path",
  },
  {
    name: "PDU Host of an IPv6 address in brackets with a port",
    yaml: 'Pdus:\n  rack-a:\n    Connection: { Host: "[fd00::5]:443" }\n',
    key: "Pdus.rack-a.Connection.Host",
    says: "write [fd00::5]; the port (443) goes in Pdus.rack-a.Connection.Port",
  },
  {
    name: "PDU Host with a space",
    yaml: 'Pdus:\n  rack-a:\n    Connection: { Host: "pdu lan" }\n',
    key: "Pdus.rack-a.Connection.Host",
    says: "must be a host name or an IP address",
  },
  {
    name: "MQTT Host written as a URL",
    yaml: `Mqtt:\n  Connection:\n    Host: mqtts://broker.lan:8883\n${PDU}`,
    key: "Mqtt.Connection.Host",
    line: 3,
    says: "the scheme (mqtts) goes in Mqtt.Connection.Scheme (mqtt, mqtts, ws or wss), the port (8883) in Mqtt.Connection.Port",
  },
  {
    name: "MQTT Host with a port",
    yaml: `Mqtt:\n  Connection: { Host: "broker.lan:1884" }\n${PDU}`,
    key: "Mqtt.Connection.Host",
    says: "the port (1884) goes in Mqtt.Connection.Port",
  },
  {
    name: "MQTT Host of an IPv6 address in brackets",
    yaml: `Mqtt:\n  Connection: { Host: "[::1]" }\n${PDU}`,
    key: "Mqtt.Connection.Host",
    says: "without brackets here",
  },
  {
    name: "MQTT password without a user name (file)",
    yaml: `Mqtt:\n  Credentials:\n    Password: p\n${PDU}`,
    key: "Mqtt.Credentials.Username",
    line: 2,
    says: "is required when an MQTT password is set",
  },
  {
    name: "MQTT password without a user name (environment)",
    yaml: PDU,
    env: { SERVICE_MQTT_PASSWORD: "p" },
    key: "Mqtt.Credentials.Username",
    says: "SERVICE_MQTT_USERNAME",
  },
  {
    name: "HTTP headers timeout longer than the request timeout",
    yaml: `${PDU}Http:\n  RequestTimeout: 5\n  HeadersTimeout: 6\n`,
    key: "Http.HeadersTimeout",
    line: 7,
    says: "must not be longer than Http.RequestTimeout (5)",
  },
  {
    name: "HTTP connection cap of 0",
    yaml: `${PDU}Http: { MaxConnections: 0 }\n`,
    key: "Http.MaxConnections",
    says: "must be >= 1",
  },
  {
    name: "a trusted proxy that is not an IP address",
    yaml: `${PDU}Api:\n  TrustedProxies: [10.0.0.5, ingress.lan]\n`,
    key: "Api.TrustedProxies.1",
    says: 'must be an IP address written out, like 10.0.0.5 or fd00::5 (got "ingress.lan")',
  },
  {
    name: "a trusted proxy range",
    yaml: `${PDU}Api: { TrustedProxies: [10.0.0.0/8] }\n`,
    key: "Api.TrustedProxies.0",
    says: "names and ranges are not accepted",
  },
  {
    name: "sign-in without an issuer",
    yaml: `${PDU}Api:\n  PublicUrl: https://pdu.example.com\n  Oidc:\n    Enabled: true\n`,
    key: "Api.Oidc.Issuer",
    line: 7,
    says: "is required when Api.Oidc.Enabled is true",
  },
  {
    name: "an SNMP community for a Geist instance, from the environment",
    yaml: PDU,
    env: { SERVICE_PDU_RACK_A_COMMUNITY: "public-s3cret" },
    key: "Pdus.rack-a.Snmp.Community",
    says: "is set (SERVICE_PDU_RACK_A_COMMUNITY) but Driver is geist, which uses no SNMP secret",
  },
  {
    name: "an SNMP community in the file for a Geist instance",
    yaml: `${PDU}    Snmp: { Community: public-s3cret }\n`,
    key: "Pdus.rack-a.Snmp.Community",
    line: 5,
    says: "is set (Pdus.rack-a.Snmp.Community in the file) but Driver is geist",
  },
  {
    name: "a community for an SNMPv3 instance",
    yaml: "Pdus:\n  rack-a:\n    Driver: snmp\n    Connection: { Host: 127.0.0.1 }\n    Snmp: { Version: 3, Auth: { Username: ops } }\n",
    env: {
      SERVICE_PDU_RACK_A_AUTH_KEY: "auth-key-s3cret",
      SERVICE_PDU_RACK_A_PRIV_KEY: "priv-key-s3cret",
      SERVICE_PDU_RACK_A_WRITE_COMMUNITY: "write-s3cret",
    },
    key: "Pdus.rack-a.Snmp.WriteCommunity",
    says: "but Version is 3, which authenticates with Auth.Username, AuthKey and PrivKey",
  },
  {
    name: "an issuer over plain HTTP off loopback",
    yaml: `${PDU}Api: { Oidc: { Enabled: true, Issuer: "http://id.example.com/realms/ops" } }\n`,
    key: "Api.Oidc.Issuer",
    says: "must be an https URL",
  },
  {
    name: "scopes without openid",
    yaml: `${PDU}Api: { Oidc: { Enabled: true, Issuer: "https://id.example.com", Scopes: [profile] } }\n`,
    key: "Api.Oidc.Scopes",
    says: "must include openid",
  },
  {
    name: "no role lists any group",
    yaml: `${PDU}Api: { Oidc: { Enabled: true, Issuer: "https://id.example.com", Roles: { Viewer: [], Operator: [] } } }\n`,
    key: "Api.Oidc.Roles",
    says: "nobody could use the console",
  },
  {
    name: "ProtectReads without sign-in",
    yaml: `${PDU}Api: { Oidc: { ProtectReads: true } }\n`,
    key: "Api.Oidc.ProtectReads",
    says: "needs Api.Oidc.Enabled: true",
  },
  {
    name: "a client secret file that cannot be read",
    yaml: PDU,
    env: { SERVICE_OIDC_CLIENT_SECRET_FILE: "/nonexistent/oidc-secret" },
    key: "SERVICE_OIDC_CLIENT_SECRET_FILE",
  },
  {
    name: "a certificate without its key",
    yaml: `${PDU}Api: { Tls: { CertFile: /etc/ssl/api.pem } }\n`,
    key: "Api.Tls.KeyFile",
    says: "HTTPS needs both",
  },
  {
    name: "a certificate file that cannot be read",
    yaml: `${PDU}Api: { Tls: { CertFile: /nonexistent/api.pem, KeyFile: /nonexistent/api.key } }\n`,
    key: "Api.Tls.CertFile",
    says: "cannot read /nonexistent/api.pem",
  },
  {
    name: "sign-in without a public URL (the redirect URI would follow the request's Host)",
    yaml: `${PDU}Api: { Oidc: { Enabled: true, Issuer: "https://id.example.com" } }\n`,
    key: "Api.PublicUrl",
    says: "is required when Api.Oidc.Enabled is true",
  },
  {
    name: "a public URL with a path",
    yaml: `${PDU}Api: { PublicUrl: "https://pdu.example.com/console" }\n`,
    key: "Api.PublicUrl",
    says: "must be an origin only",
  },
  {
    name: "per-instance secret _FILE missing",
    yaml: PDU,
    env: { SERVICE_PDU_RACK_A_PASSWORD_FILE: "/nonexistent/pw" },
    key: "SERVICE_PDU_RACK_A_PASSWORD_FILE",
  },
  {
    name: "override with an unknown key (typo)",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        DEV1:\n          "0": { Nmae: x }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.DEV1.0.Nmae",
    says: "did you mean `Name`?",
  },
  {
    name: "override Hidden not a boolean",
    yaml: `${PDU}    Overrides:\n      Entities:\n        DEV1:\n          phase0: { Hidden: "yes" }\n`,
    key: "Pdus.rack-a.Overrides.Entities.DEV1.phase0.Hidden",
    says: "must be true or false",
  },
  {
    name: "override outlet index not a 0-based integer",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        DEV1:\n          "01": { Hidden: true }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.DEV1.01",
  },
  {
    name: "override Name too long",
    yaml: `${PDU}    Overrides:\n      Groups:\n        "2": { Name: ${"x".repeat(65)} }\n`,
    key: "Pdus.rack-a.Overrides.Groups.2.Name",
    says: "64",
  },
  {
    name: "override Name not a safe name",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        DEV1:\n          "3": { Name: "rack/left" }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.DEV1.3.Name",
    line: 8,
    says: "contains '/', '+' or '#'",
  },
  {
    name: "override Name with a right-to-left override",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        DEV1:\n          "3": { Name: "core\u202eswitch" }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.DEV1.3.Name",
    line: 8,
    says: "contains U+202E, a bidirectional override: a Name must not change how text is displayed",
  },
  {
    name: "override Name with a line separator",
    yaml: `${PDU}    Overrides:\n      Groups:\n        "2": { Name: "db\u2028cluster" }\n`,
    key: "Pdus.rack-a.Overrides.Groups.2.Name",
    says: "contains U+2028, a line separator",
  },
  {
    name: "override device id not a safe name",
    yaml: `${PDU}    Overrides:\n      Outlets:\n        "a#b":\n          "0": { Hidden: true }\n`,
    key: "Pdus.rack-a.Overrides.Outlets.a#b",
    says: "device id",
  },
  {
    name: "Measurements with an empty list",
    yaml: `${PDU}    Measurements: []\n`,
    key: "Pdus.rack-a.Measurements",
  },
  {
    name: "Measurements with a type that is not a word",
    yaml: `${PDU}    Measurements: [real power]\n`,
    key: "Pdus.rack-a.Measurements.0",
  },
  {
    name: "Cluster.RenewDeadlineSeconds not below LeaseDurationSeconds",
    yaml: `${PDU}Cluster:\n  LeaseDurationSeconds: 10\n  RenewDeadlineSeconds: 10\n`,
    key: "Cluster.RenewDeadlineSeconds",
    line: 7,
    says: "must be less than Cluster.LeaseDurationSeconds (10)",
  },
  {
    name: "Cluster.RetryPeriodSeconds * 1.2 not below RenewDeadlineSeconds",
    yaml: `${PDU}Cluster:\n  RenewDeadlineSeconds: 6\n  RetryPeriodSeconds: 5\n`,
    key: "Cluster.RetryPeriodSeconds",
    line: 7,
    says: "times 1.2 must be less than Cluster.RenewDeadlineSeconds (6)",
  },
  {
    name: "Cluster.RetryPeriodSeconds defaulted against a short RenewDeadlineSeconds",
    yaml: `${PDU}Cluster:\n  RenewDeadlineSeconds: 2.4\n`,
    key: "Cluster.RetryPeriodSeconds",
    line: 5,
    says: "(2.4)",
  },
  {
    name: "Cluster.MemberName not a valid name",
    yaml: `${PDU}Cluster:\n  Enabled: true\n  MemberName: Replica_1\n`,
    key: "Cluster.MemberName",
    line: 7,
  },
  {
    name: "Cluster on with a host name that is not a member name",
    yaml: `${PDU}Cluster:\n  Enabled: true\n  Backend: etcd\nMqtt: { Connection: { Host: 127.0.0.1 } }\n`,
    env: { HOSTNAME: "bridge_01" },
    key: "Cluster.MemberName",
    line: 5,
    says: 'the host name "bridge_01" is not a valid member name',
  },
  {
    name: "Cluster.Buckets zero",
    yaml: `${PDU}Cluster:\n  Buckets: 0\n`,
    key: "Cluster.Buckets",
    line: 6,
  },
  {
    name: "Cluster.Backend unknown",
    yaml: `${PDU}Cluster:\n  Backend: zookeeper\n`,
    key: "Cluster.Backend",
    line: 6,
  },
  {
    name: "Cluster.Etcd.Endpoints with a path",
    yaml: `${PDU}Cluster:\n  Etcd:\n    Endpoints: [http://127.0.0.1:2379/v3]\n`,
    key: "Cluster.Etcd.Endpoints.0",
  },
  {
    name: "Cluster.Etcd.Endpoints with credentials in the URL",
    yaml: `${PDU}Cluster:\n  Etcd:\n    Endpoints: ["http://root:etcd-pw-9@127.0.0.1:2379"]\n`,
    key: "Cluster.Etcd.Endpoints.0",
    line: 7,
    says: "must not hold credentials (user:password@): set SERVICE_ETCD_USERNAME",
  },
  {
    name: "Cluster.Etcd.CaFile that does not exist",
    yaml: `${PDU}Cluster:\n  Etcd:\n    CaFile: missing-ca.pem\n`,
    key: "Cluster.Etcd.CaFile",
    line: 7,
    says: "no such file",
  },
  {
    name: "etcd password without a user name",
    yaml: PDU,
    env: { SERVICE_ETCD_PASSWORD: "etcd-secret-1" },
    key: "SERVICE_ETCD_USERNAME",
    says: "is required when SERVICE_ETCD_PASSWORD is set",
  },
  {
    name: "a rating of zero amps",
    yaml: `${PDU}    Ratings: { Breakers: 0 }\n`,
    key: "Pdus.rack-a.Ratings.Breakers",
    line: 5,
    says: "must be > 0 (got 0)",
  },
  {
    name: "a rating by an unknown kind",
    yaml: `${PDU}    Ratings: { Breaker: 16 }\n`,
    key: "Pdus.rack-a.Ratings.Breaker",
    line: 5,
    says: "did you mean `Breakers`?",
  },
  {
    name: "a rating's entity key with two slashes",
    yaml: `${PDU}    Ratings:\n      Entities: { "a/b/breaker0": 16 }\n`,
    key: "Pdus.rack-a.Ratings.Entities.a/b/breaker0",
    says: "one '/'",
  },
  {
    name: "a rating's entity key that is no safe name",
    yaml: `${PDU}    Ratings:\n      Entities: { "breaker+0": 16 }\n`,
    key: "Pdus.rack-a.Ratings.Entities.breaker+0",
  },
  {
    name: "critical load at or below the warning line",
    yaml: `Alarms:\n  WarnPercent: 90\n  CriticalPercent: 85\n${PDU}`,
    key: "Alarms.CriticalPercent",
    line: 3,
    says: "must be above Alarms.WarnPercent (90)",
  },
  {
    name: "a warning line above the default critical one",
    yaml: `Alarms:\n  WarnPercent: 96\n${PDU}`,
    key: "Alarms.WarnPercent",
    line: 2,
    says: "must be below Alarms.CriticalPercent (95)",
  },
];

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "pdu-bridge-rules-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function runCli(args: string[], env: Record<string, string>, cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env, cwd }, (error, stdout, stderr) => {
      resolve({
        code: error === null ? 0 : typeof error.code === "number" ? error.code : null,
        stdout,
        stderr,
      });
    });
  });
}

describe("configuration rules", { concurrency: 4 }, () => {
  for (const [index, c] of CASES.entries()) {
    test(c.name, async () => {
      const caseDir = join(dir, String(index));
      await mkdir(caseDir);
      const file = join(caseDir, "config.yaml");
      await writeFile(file, c.yaml);
      const env = c.env ?? {};

      const error = await loadConfigFile(file, env).then(
        () => assert.fail("expected a ConfigError"),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.key, c.key);
      if (c.key !== "") assert.ok(error.message.startsWith(`config error: ${c.key}: `), error.message);
      if (c.line !== undefined) {
        assert.equal(error.line, c.line);
        assert.ok(error.message.endsWith(` at ${file} line ${c.line}`), error.message);
      }
      if (c.says !== undefined) assert.ok(error.message.includes(c.says), error.message);

      const cli = await runCli(["check-config", "--config", file], env, caseDir);
      assert.equal(cli.code, 2, cli.stderr);
      assert.equal(cli.stderr, `${error.message}\n`);
      assert.doesNotMatch(cli.stderr, /^\s+at /m);
      assert.equal(cli.stdout, "");
    });
  }
});

test("the message format is key, problem, file and line", async () => {
  const file = join(dir, "format.yaml");
  await writeFile(file, `${PDU}    PollInterval: 0\n`);
  await assert.rejects(loadConfigFile(file, {}), {
    message: `config error: Pdus.rack-a.PollInterval: must be >= 1 (got 0) at ${file} line 5`,
  });
});

test("hosts written alone are accepted: names, IPv4, IPv6 (in brackets too, for a PDU)", async () => {
  const file = join(dir, "hosts.yaml");
  const yaml = [
    "Mqtt:",
    '  Connection: { Host: "::1" }',
    "Pdus:",
    ...["pdu-1.rack.lan", "10.0.0.5", "fd00::5", "[fd00::6]", "pdu_7"].map(
      (host, i) => `  p${i}:\n    Connection: { Host: "${host}" }`,
    ),
    "",
  ].join("\n");
  await writeFile(file, yaml);
  const config = await loadConfigFile(file, {});
  assert.deepEqual(
    config.instances.map((i) => i.Connection.Host),
    ["pdu-1.rack.lan", "10.0.0.5", "fd00::5", "[fd00::6]", "pdu_7"],
  );
});

test("every problem of a file is reported, in file order, by check-config and by the service", async () => {
  const file = join(dir, "several.yaml");
  const yaml = [
    "Mqtt:",
    "  KeepAlive: 0", // 2
    "  Colour: blue", // 3
    "Pdus:",
    "  rack-a:",
    "    Conection: { Host: 10.0.0.1 }", // 6: misspelt, so not also "Connection is required"
    "  rack-b:",
    "    Connection: { Host: 10.0.0.2 }",
    "    PollInterval: fast", // 9
    "  bad id:", // 10
    "    Connection: { Host: 10.0.0.3 }",
    "",
  ].join("\n");
  await writeFile(file, yaml);
  const error = await loadConfigFile(file, {}).then(
    () => assert.fail("expected a ConfigError"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ConfigError);
  const lines = error.message.split("\n");
  assert.deepEqual(
    lines.map((l) => /^config error: (.+?): .* line (\d+)$/.exec(l)?.slice(1)),
    [
      ["Mqtt.KeepAlive", "2"],
      ["Mqtt.Colour", "3"],
      ["Pdus.rack-a.Conection", "6"],
      ["Pdus.rack-b.PollInterval", "9"],
      ["Pdus.bad id", "10"],
    ],
    error.message,
  );
  assert.equal(error.problems.length, 5);
  assert.equal(error.key, "Mqtt.KeepAlive", "the error's own key is the first problem's");
  const cli = await runCli(["check-config", "--config", file], {}, dir);
  assert.equal(cli.code, 2);
  assert.equal(cli.stderr, `${error.message}\n`);
  assert.equal(cli.stdout, "");
  const run = await runCli(["--config", file], {}, dir);
  assert.equal(run.code, 2);
  assert.equal(run.stderr, `${error.message}\n`);
});

test("every rule that reads the values is reported once the shape is right", async () => {
  const file = join(dir, "rules.yaml");
  const yaml = [
    "Mqtt:",
    '  Connection: { Host: "mqtt://broker.lan" }', // 2
    "Pdus:",
    "  rack-a:",
    '    Connection: { Host: "http://10.0.0.1:8080" }', // 5
    "  rack-b:",
    '    Connection: { Host: "10.0.0.2:80" }', // 7
    "Api:",
    "  Enabled: true",
    "  Port: 8081", // 10: Health.Port's default
    "",
  ].join("\n");
  await writeFile(file, yaml);
  const cli = await runCli(["check-config", "--config", file], { SERVICE_API_KEY: "z".repeat(32) }, dir);
  assert.equal(cli.code, 2);
  const lines = cli.stderr.trimEnd().split("\n");
  assert.deepEqual(
    lines.map((l) => /^config error: (\S+?): /.exec(l)?.[1]),
    [
      "Mqtt.Connection.Host",
      "Pdus.rack-a.Connection.Host",
      "Pdus.rack-b.Connection.Host",
      "Api.Port",
      "SERVICE_API_KEY",
    ],
    cli.stderr,
  );
  assert.ok(!cli.stderr.includes("z".repeat(32)), "the key is never shown");
});

test("check-config ends with a line that says the configuration is valid", async () => {
  const file = join(dir, "valid.yaml");
  await writeFile(file, PDU);
  const cli = await runCli(["check-config", "--config", file], {}, dir);
  assert.equal(cli.code, 0, cli.stderr);
  assert.equal(cli.stderr, "");
  assert.equal(cli.stdout.trimEnd().split("\n").at(-1), `# ${file} is valid (1 PDU instance)`);
});

test("check-config warns (exit 0) about overrides without effect and says ids are checked after a poll", async () => {
  const file = join(dir, "overrides.yaml");
  const yaml = [
    PDU.trimEnd(),
    "    Overrides:",
    "      Outlets:",
    "        DEV1:",
    '          "0": { Protected: true }',
    '          "1": { Name: x, Hidden: true }',
    '          "2": {}',
    "",
  ].join("\n");
  await writeFile(file, yaml);
  const cli = await runCli(["check-config", "--config", file], {}, dir);
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stdout, /Protected: true/);
  const warnings = cli.stderr.trimEnd().split("\n");
  assert.deepEqual(
    warnings.map((w) => w.split(":")[1]?.trim()),
    [
      "Pdus.rack-a.Overrides.Outlets.DEV1.0.Protected",
      "Pdus.rack-a.Overrides.Outlets.DEV1.1.Name",
      "Pdus.rack-a.Overrides.Outlets.DEV1.2",
      "overrides of rack-a",
    ],
    cli.stderr,
  );
  assert.match(cli.stderr, /not checked here \(check-config does not contact PDUs\)/);
  assert.equal(
    cli.stdout.trimEnd().split("\n").at(-1),
    `# ${file} is valid (1 PDU instance; 4 warnings on stderr)`,
  );
});
