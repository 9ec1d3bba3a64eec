/**
 * The configuration file's schema: one typebox schema that gives the loader its validation and
 * defaults, gives the code its types, and is emitted as `config.schema.json` for editors.
 *
 * Keys are PascalCase, as docs/configuration.md lists them. Values that depend on other values
 * (ports inferred from schemes and back) are optional here and filled in by the loader, which
 * returns the resolved {@link Config} below.
 *
 * A key marked `appliesLive: true` is taken by a running service when the Kubernetes source sees it
 * change (src/config/kubernetes/diff.ts); a change of any other key needs a restart.
 */
import Type, { type Static } from "typebox";

const nullableString = (description: string) =>
  Type.Union([Type.String(), Type.Null()], { default: null, description });

const port = (description: string, defaultPort?: number) =>
  Type.Integer({
    minimum: 0,
    maximum: 65535,
    description: `${description} (0 picks a free port, for tests)`,
    ...(defaultPort === undefined ? {} : { default: defaultPort }),
  });

/** A port the service connects to (0 is not a port one can connect to). */
const remotePort = (description: string) => Type.Integer({ minimum: 1, maximum: 65535, description });

/** `prefixes`: the SERVICE_* variables (without `_USERNAME`/`_PASSWORD`) that can set them instead. */
const credentials = (what: string, prefixes: readonly string[]) =>
  Type.Object(
    {
      Username: nullableString(
        `User name for ${what}; or set ${prefixes.map((p) => `${p}_USERNAME`).join(" or ")}`,
      ),
      Password: nullableString(
        `Password for ${what}; a secret: set ${prefixes.map((p) => `${p}_PASSWORD`).join(" or ")} instead`,
      ),
    },
    { additionalProperties: false, default: {}, description: `Credentials for ${what}` },
  );

export const MqttSchemes = ["mqtt", "mqtts", "ws", "wss"] as const;
export type MqttScheme = (typeof MqttSchemes)[number];
export const PduSchemes = ["http", "https"] as const;
export type PduScheme = (typeof PduSchemes)[number];
export const LogLevels = ["trace", "debug", "info", "warn", "error"] as const;

export const MqttConnectionSchema = Type.Object(
  {
    Host: Type.Optional(
      Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
        description:
          "Broker host name or IP address alone (no scheme, port or path: those are Scheme and Port); omitted: the service starts its embedded broker and uses it",
      }),
    ),
    Port: Type.Optional(
      remotePort("Broker port; default from Scheme: mqtt 1883, mqtts 8883, ws 8000, wss 8884"),
    ),
    Scheme: Type.Optional(
      Type.Enum(MqttSchemes, {
        description: "Transport; default from Port: 8883 mqtts, 8000 ws, 8884 wss, else mqtt",
      }),
    ),
    ValidateCertificate: Type.Boolean({
      default: true,
      description: "Check the broker's TLS certificate (mqtts/wss)",
    }),
    CaFile: nullableString("PEM file of a private CA for the broker's certificate (mqtts/wss)"),
    ProtocolVersion: Type.Union([Type.Literal(4), Type.Literal(5)], {
      default: 4,
      description: "MQTT protocol version: 4 (3.1.1) or 5",
    }),
  },
  { additionalProperties: false, default: {}, description: "The broker the bridge connects to" },
);

export const MqttSchema = Type.Object(
  {
    Connection: MqttConnectionSchema,
    Credentials: credentials("the MQTT broker", ["SERVICE_MQTT"]),
    ClientId: Type.String({
      minLength: 1,
      maxLength: 128,
      default: "pdu-bridge",
      description: "MQTT client id",
    }),
    ParentTopic: Type.String({
      minLength: 1,
      maxLength: 200,
      pattern: "^[^#+]+$",
      default: "pdu-bridge",
      description: "Root of every topic the bridge publishes (no wildcards)",
    }),
    KeepAlive: Type.Integer({
      minimum: 1,
      maximum: 65535,
      default: 60,
      description: "MQTT keep-alive in seconds",
    }),
    MaxPacketSize: Type.Union([Type.Integer({ minimum: 1024, maximum: 268435455 }), Type.Null()], {
      default: null,
      description:
        "Largest MQTT packet (bytes) the broker at Connection.Host accepts, for a broker that cannot announce it (MQTT 3.1.1): a larger message is dropped and counted instead of costing the connection; an MQTT 5 broker's own announced limit applies as well; null: no limit. The embedded broker's is Embedded.MaxPacketSize",
    }),
    Embedded: Type.Object(
      {
        Bind: Type.String({
          minLength: 1,
          default: "127.0.0.1",
          description: "Address the embedded broker listens on",
        }),
        Port: port("Port of the embedded broker", 1883),
        MaxPacketSize: Type.Integer({
          minimum: 1024,
          maximum: 268435455,
          default: 262144,
          description:
            "Largest MQTT packet (bytes) the embedded broker accepts from a client; a larger one closes the connection",
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: "Embedded MQTT 3.1.1 broker, used only when Connection.Host is omitted",
      },
    ),
  },
  { additionalProperties: false, default: {}, description: "MQTT: the broker and the topics" },
);

export const PduConnectionSchema = Type.Object(
  {
    Host: Type.String({
      minLength: 1,
      description:
        "PDU host name or IP address alone, the master's for a OneView cluster (no scheme, port or path: those are Scheme and Port)",
    }),
    Port: Type.Optional(remotePort("PDU port; default 443 for https, else 80; 161 with Driver snmp")),
    Scheme: Type.Optional(
      Type.Enum(PduSchemes, { description: "Protocol; default https when Port is 443, else http" }),
    ),
    Timeout: Type.Number({
      exclusiveMinimum: 0,
      maximum: 600,
      default: 15,
      description: "Seconds allowed for each request to the PDU",
    }),
    ValidateCertificate: Type.Boolean({
      default: true,
      description: "Check the PDU's TLS certificate; false accepts self-signed units (CaFile is safer)",
    }),
    CaFile: nullableString("PEM file of the CA (or the unit's self-signed certificate) to trust"),
  },
  { additionalProperties: false, description: "How to reach the PDU" },
);

/** Longest override `Name`, in characters (it becomes a label payload and a Home Assistant name). */
export const MAX_OVERRIDE_NAME_LENGTH = 64;

const overrideName = Type.String({
  whenAbsent: "the PDU's label",
  minLength: 1,
  maxLength: MAX_OVERRIDE_NAME_LENGTH,
  description: `Display name in MQTT, Home Assistant, REST and the console instead of the PDU's label (1-${MAX_OVERRIDE_NAME_LENGTH} characters, a safe name: no '/', '+', '#' or control characters); the PDU keeps its label`,
});
const overrideHidden = Type.Boolean({
  whenAbsent: "`false`",
  description: "true: no MQTT topics and no Home Assistant entities (REST lists it with hidden: true)",
});
const overrideProtected = (what: string) =>
  Type.Boolean({
    whenAbsent: "`false`",
    description: `true: off and reboot of ${what} are refused (409) on every path; on stays allowed`,
  });

/** Override keys the PDU supplies (device ids, entity and group keys); checked as safe names by the loader. */
const overrideKey = (what: string) => Type.String({ minLength: 1, maxLength: 128, description: what });

/** An outlet index as a key: the PDU's own 0-based map key, written as text (`"0"`, `"7"`). */
export const OverrideIndexPattern = "^(0|[1-9][0-9]{0,5})$";

export const OverridesSchema = Type.Object(
  {
    Outlets: Type.Record(
      overrideKey("device id"),
      Type.Record(
        Type.String({ pattern: OverrideIndexPattern }),
        Type.Object(
          {
            Name: Type.Optional(overrideName),
            Hidden: Type.Optional(overrideHidden),
            Protected: Type.Optional(overrideProtected("the outlet (alone or in a group)")),
          },
          { additionalProperties: false, description: "One outlet's override" },
        ),
        {
          keyName: "index",
          description: 'Outlet index ("0" is the first outlet) to its override',
        },
      ),
      {
        default: {},
        keyName: "deviceId",
        description:
          "Outlet overrides: device id, then outlet index; applies without a restart (Kubernetes source)",
      },
    ),
    Entities: Type.Record(
      overrideKey("device id"),
      Type.Record(
        overrideKey("entity key"),
        Type.Object(
          { Name: Type.Optional(overrideName), Hidden: Type.Optional(overrideHidden) },
          { additionalProperties: false, description: "One entity's override" },
        ),
        { keyName: "entityKey", description: "Entity key (phase0, breaker1, total0, ...) to its override" },
      ),
      {
        default: {},
        keyName: "deviceId",
        description:
          "Entity overrides (phases, breakers, totals): device id, then entity key; applies without a restart (Kubernetes source)",
      },
    ),
    Groups: Type.Record(
      overrideKey("group key"),
      Type.Object(
        {
          Name: Type.Optional(overrideName),
          Hidden: Type.Optional(overrideHidden),
          Protected: Type.Optional(overrideProtected("the whole group (its group actions)")),
        },
        { additionalProperties: false, description: "One OneView group's override" },
      ),
      {
        default: {},
        keyName: "groupKey",
        description: "OneView group overrides, by group key; applies without a restart (Kubernetes source)",
      },
    ),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      "Names, hiding and protection of outlets, entities and groups (docs/control.md, Overrides); unknown ids are warned about after the first poll",
    appliesLive: true,
  },
);

/** Largest rated current accepted, in amps. */
export const MAX_RATING_AMPS = 10_000;

const amps = (what: string) =>
  Type.Number({
    exclusiveMinimum: 0,
    maximum: MAX_RATING_AMPS,
    whenAbsent: "none",
    description: `Rated current in amps of ${what}, where the PDU reports none`,
  });

/**
 * The configuration keys of ratings by kind, and the entity key prefix each covers (an entity key
 * is its kind and a number: `phase0`, `breaker1`); `Outlets` covers outlets.
 */
export const RATING_KINDS = [
  ["Outlets", null],
  ["Phases", "phase"],
  ["Banks", "bank"],
  ["Breakers", "breaker"],
  ["Inlets", "inlet"],
  ["Lines", "line"],
  ["Cords", "cord"],
  ["Totals", "total"],
] as const;

/** `Pdus.<id>.Ratings.Entities` keys: an entity key, or `<deviceId>/<entityKey>` (one device). */
export const RatingEntityKeyPattern = "^[^/]{1,128}(/[^/]{1,128})?$";

export const RatingsSchema = Type.Object(
  {
    Outlets: Type.Optional(amps("every outlet")),
    Phases: Type.Optional(amps("every phase (entities phase0, phase1, ...)")),
    Banks: Type.Optional(amps("every bank (entities bank0, bank1, ...)")),
    Breakers: Type.Optional(amps("every breaker (entities breaker0, breaker1, ...)")),
    Inlets: Type.Optional(amps("every inlet (entities inlet0, ...)")),
    Lines: Type.Optional(amps("every line (entities line0, ...)")),
    Cords: Type.Optional(amps("every input cord (entities cord0, ...)")),
    Totals: Type.Optional(amps("the whole unit (entities total0, ...)")),
    Entities: Type.Optional(
      Type.Record(Type.String({ pattern: RatingEntityKeyPattern }), amps("this entity"), {
        keyName: "entityKey",
        whenAbsent: "none",
        description:
          "By entity key (breaker0), or device id and entity key (A0AE260C851900C4/breaker0) for one device of a OneView cluster; before the kind's value",
      }),
    ),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      "Rated currents (amps) to compare currents with, by kind or by entity key, where the PDU reports none (docs/alarms.md)",
  },
);

/** PDU families with a driver (src/pdu/drivers.ts). */
export const PduDrivers = ["geist", "snmp"] as const;

/** SNMP profiles (src/pdu/snmp/profiles/, docs/snmp.md); `auto` detects from sysObjectID and the tables that answer. */
export const SnmpProfileNames = [
  "auto",
  "apc-rpdu2",
  "apc-rpdu",
  "raritan-px2",
  "raritan-px",
  "servertech-sentry4",
  "servertech-sentry3",
  "cyberpower-epdu2",
  "cyberpower-epdu",
  "eaton-epdu",
] as const;
export type SnmpProfileName = (typeof SnmpProfileNames)[number];

/** A secret of the SNMP block: from the environment, else the file (as every secret). */
const snmpSecret = (variable: string, what: string) =>
  Type.Union([Type.String(), Type.Null()], {
    default: null,
    description: `${what}; a secret: SERVICE_PDU_<ID>_${variable} (or SERVICE_PDU_<ID>_${variable}_FILE) wins over the file, and a ConfigMap may not hold it`,
  });

export const SnmpSchema = Type.Object(
  {
    Version: Type.Union([Type.Literal("2c"), Type.Literal("3"), Type.Literal(3)], {
      default: "2c",
      description: "SNMP version: 2c (communities) or 3 (USM user with keys)",
    }),
    Profile: Type.Enum(SnmpProfileNames, {
      default: "auto",
      description:
        "The PDU family's profile (docs/snmp.md); auto picks it from sysObjectID and the tables the agent answers",
    }),
    Auth: Type.Object(
      {
        Username: nullableString("SNMPv3 user name (required with Version 3)"),
        Protocol: Type.Enum(["sha", "sha256"] as const, {
          default: "sha",
          description: "SNMPv3 authentication protocol: sha (HMAC-SHA-96) or sha256",
        }),
        PrivProtocol: Type.Enum(["aes", "none"] as const, {
          default: "aes",
          description: "SNMPv3 privacy: aes (AES-128, authPriv) or none (authNoPriv)",
        }),
      },
      { additionalProperties: false, default: {}, description: "SNMPv3 user (Version 3)" },
    ),
    MaxRepetitions: Type.Integer({
      minimum: 1,
      maximum: 100,
      default: 24,
      description: "Most rows asked for in one GETBULK request",
    }),
    Community: snmpSecret("COMMUNITY", "SNMPv2c read community"),
    WriteCommunity: snmpSecret("WRITE_COMMUNITY", "SNMPv2c write community (control and outlet names)"),
    AuthKey: snmpSecret("AUTH_KEY", "SNMPv3 authentication key (at least 8 characters)"),
    PrivKey: snmpSecret("PRIV_KEY", "SNMPv3 privacy key (at least 8 characters)"),
  },
  {
    additionalProperties: false,
    default: {},
    description: "SNMP settings, used when Driver is snmp (docs/snmp.md)",
  },
);
export type PduDriverName = (typeof PduDrivers)[number];

/** Instance ids: 1–64 characters of A-Za-z0-9_- (they appear in topics, URLs and variable names). */
export const InstanceIdPattern = "^[A-Za-z0-9_-]{1,64}$";

/** Feed, asset, tenant and tag ids (docs/assets.md): they become MQTT topic levels, URL segments and labels. */
export const AssetIdPattern = "^[A-Za-z0-9_-]{1,64}$";

const assetId = (what: string) => Type.String({ pattern: AssetIdPattern, description: what });

const assetLabel = Type.String({
  minLength: 1,
  maxLength: MAX_OVERRIDE_NAME_LENGTH,
  whenAbsent: "the id",
  description: `Display name in REST, MQTT, Home Assistant and the console (1-${MAX_OVERRIDE_NAME_LENGTH} characters, a safe name)`,
});

/** `Pdus.<id>.Feed`, `DeviceFeeds` and `OutletCircuits` (docs/assets.md). */
const pduAssetKeys = {
  Feed: Type.Optional(
    Type.String({
      pattern: AssetIdPattern,
      whenAbsent: "none: on no feed",
      description:
        "The feed (a key of Feeds) this instance's inlets hang on; the feed-loss projection and the assets' cords read it (docs/assets.md)",
      appliesLive: true,
    }),
  ),
  DeviceFeeds: Type.Optional(
    Type.Record(Type.String({ minLength: 1, maxLength: 128 }), assetId("A key of Feeds"), {
      keyName: "deviceId",
      whenAbsent: "none",
      description:
        "Per device where one instance (a OneView cluster) mixes feeds: device id to feed, before Feed",
      appliesLive: true,
    }),
  ),
  OutletCircuits: Type.Optional(
    Type.Record(
      Type.String({ minLength: 1, maxLength: 140 }),
      Type.String({ minLength: 1, maxLength: 128, description: "Entity key (breaker0, bank1, phase0, ...)" }),
      {
        keyName: "outlets",
        whenAbsent: "none",
        description:
          'Which entity each outlet draws through where the PDU does not say: 0-based outlet index or range ("0-11") to entity key, for every device, or "<deviceId>/0-11" for one; fills Outlet.feedsFrom (docs/assets.md)',
        appliesLive: true,
      },
    ),
  ),
};

export const AssetCordSchema = Type.Object(
  {
    Instance: Type.String({ pattern: InstanceIdPattern, description: "The instance (a key of Pdus)" }),
    Device: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        whenAbsent: "the one device of the instance with this outlet index",
        description: "The device id, needed when the outlet index is on several devices of the instance",
      }),
    ),
    Outlet: Type.Integer({
      minimum: 0,
      maximum: 4095,
      description: "0-based outlet index, as in the REST API",
    }),
  },
  { additionalProperties: false, description: "One outlet that feeds the asset" },
);

export const AssetSchema = Type.Object(
  {
    Label: Type.Optional(assetLabel),
    Cords: Type.Array(AssetCordSchema, {
      minItems: 1,
      maxItems: 8,
      description: "1 to 8 outlets that feed it, on any instances; an outlet feeds one asset",
    }),
    Protected: Type.Optional(
      Type.Boolean({
        whenAbsent: "`false`",
        description:
          "true: an off (of the asset, an outlet, a group or a setting) that would leave it with no live cord is refused (409)",
      }),
    ),
    Priority: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        whenAbsent: "100: after every asset that names one",
        description: "Sequence order: lower first on power-on, last on power-off",
      }),
    ),
    Tenant: Type.Optional(assetId("Tenant, for sums and filters")),
    Tags: Type.Optional(
      Type.Array(assetId("A tag"), {
        maxItems: 32,
        whenAbsent: "none",
        description: "Tags, for filters and sequences",
      }),
    ),
    StartSeconds: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 3600,
        whenAbsent: "30",
        description: "How long it draws its start-up current: a sequence's wave waits this long",
      }),
    ),
  },
  { additionalProperties: false, description: "One asset (a server, a switch): the outlets that feed it" },
);

/** `Feeds`, `Assets` and `Sequences` at the top of the file (docs/assets.md). */
const assetSections = {
  Feeds: Type.Record(
    Type.String({ pattern: AssetIdPattern }),
    Type.Object(
      { Label: Type.Optional(assetLabel) },
      { additionalProperties: false, description: "One feed (a UPS, a utility supply)" },
    ),
    {
      default: {},
      keyName: "feedId",
      description:
        "The power sources above the PDUs, by id; Pdus.<id>.Feed names one (docs/assets.md); applies without a restart (Kubernetes source)",
      appliesLive: true,
    },
  ),
  Assets: Type.Record(Type.String({ pattern: AssetIdPattern }), AssetSchema, {
    default: {},
    keyName: "assetId",
    description:
      "What is plugged in, by id: servers and other loads with their cords (docs/assets.md); applies without a restart (Kubernetes source)",
    appliesLive: true,
  }),
  Sequences: Type.Object(
    {
      MaxConcurrentStarts: Type.Integer({
        minimum: 1,
        maximum: 1000,
        default: 4,
        description: "Assets a power-on sequence starts at once at most",
      }),
      GapSeconds: Type.Number({
        minimum: 0,
        maximum: 3600,
        default: 5,
        description: "Seconds between one wave of a sequence and the next",
      }),
    },
    {
      additionalProperties: false,
      default: {},
      description:
        "Power sequences of assets (docs/assets.md); applies without a restart (Kubernetes source)",
      appliesLive: true,
    },
  ),
};

export const PduSchema = Type.Object(
  {
    Connection: PduConnectionSchema,
    Credentials: credentials("the PDU (needed for control)", ["SERVICE_PDU_<ID>", "SERVICE_PDU"]),
    PollInterval: Type.Number({
      minimum: 1,
      maximum: 86400,
      default: 5,
      description:
        "Seconds between polls. The first polls of the fleet come within 10 s of the start; from the second on, the instances are polled at phases spread evenly over their interval. At 4 s or more each poll asks the unit to close its connection after the answer (`Connection: close`) rather than hold it idle until the next; shorter intervals reuse one kept-alive connection",
      appliesLive: true,
    }),
    ActionsEnabled: Type.Boolean({
      default: false,
      description: "Allow control of this PDU (REST and MQTT); refused unless true",
    }),
    RelayProtection: Type.Number({
      minimum: 0,
      maximum: 3600,
      default: 3,
      description:
        "Relay protection: the least time in seconds between two state changes (on, off, reboot) of one outlet, whichever surface sent them (MQTT, REST, the console, group commands); a change sooner is refused (409 relay-protection, saying when it may run) and nothing is sent; 0 turns it off (docs/control.md)",
    }),
    Measurements: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9_]+$" }), {
        minItems: 1,
        maxItems: 256,
        uniqueItems: true,
        description:
          "Measurement types the bridge shows (realPower, energy, current, ...; compared ignoring case): the others are dropped from the snapshot, so MQTT, Home Assistant, REST readings, metrics and the console leave them out; omitted: all",
        appliesLive: true,
        whenAbsent: "all",
      }),
    ),
    Overrides: OverridesSchema,
    Ratings: RatingsSchema,
    Driver: Type.Enum(PduDrivers, {
      default: "geist",
      description:
        "The PDU family's driver: geist (Vertiv/Geist units and OneView clusters, HTTP API) or snmp (APC, Raritan, ServerTech and other SNMP PDUs through profiles, docs/snmp.md)",
    }),
    Snmp: SnmpSchema,
    ...pduAssetKeys,
  },
  { additionalProperties: false, description: "One PDU (a single unit, or the master of a OneView cluster)" },
);

const groupList = (description: string, defaults: readonly string[]) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
    default: [...defaults],
    maxItems: 64,
    description,
  });

/** Signing in to the console with OpenID Connect (docs/console.md, "Signing in"). */
export const OidcSchema = Type.Object(
  {
    Enabled: Type.Boolean({
      default: false,
      description: "The console requires signing in at the OpenID provider (Issuer)",
    }),
    Issuer: nullableString(
      "The OpenID provider's issuer URL (https; its /.well-known/openid-configuration is read), e.g. https://id.example.com/realms/ops",
    ),
    ClientId: Type.String({
      minLength: 1,
      maxLength: 256,
      default: "pdu-bridge",
      description: "The client id registered at the provider",
    }),
    ClientSecret: nullableString(
      "The client secret (unset: a public client with PKCE); a secret: SERVICE_OIDC_CLIENT_SECRET (or SERVICE_OIDC_CLIENT_SECRET_FILE) wins over the file, and a ConfigMap may not hold it",
    ),
    Scopes: Type.Array(Type.String({ minLength: 1, maxLength: 128, pattern: "^[!#-\\[\\]-~]+$" }), {
      default: ["openid", "profile", "email"],
      minItems: 1,
      maxItems: 32,
      description: "Scopes asked for; must include openid (add groups where the provider needs it)",
    }),
    RolesClaim: Type.String({
      minLength: 1,
      maxLength: 256,
      default: "groups",
      description:
        "The claim (of the ID token, else the userinfo answer) holding the user's groups or roles; a dotted path such as realm_access.roles reaches into objects",
    }),
    Roles: Type.Object(
      {
        Viewer: groupList("Groups or roles that may see everything and control nothing", ["pdu-viewers"]),
        Operator: groupList("Groups or roles that may also control outlets and change settings", [
          "pdu-operators",
        ]),
      },
      {
        additionalProperties: false,
        default: {},
        description: "Which values of RolesClaim give which role; anyone else is refused after signing in",
      },
    ),
    ProtectReads: Type.Boolean({
      default: false,
      description:
        "The REST read endpoints and /api/v1/events need a console session or the API key (default: open, as without sign-in)",
    }),
    CaFile: nullableString("PEM file of a private CA for the provider's certificate"),
    Sessions: Type.Object(
      {
        IdleTimeout: Type.Integer({
          minimum: 1,
          maximum: 604800,
          default: 1800,
          description: "Seconds without a request from the user after which a console session ends",
        }),
        AbsoluteTimeout: Type.Integer({
          minimum: 1,
          maximum: 2592000,
          default: 43200,
          description: "Seconds after signing in at which a console session ends however active",
        }),
        Max: Type.Integer({
          minimum: 1,
          maximum: 1000000,
          default: 10000,
          description:
            "Console sessions kept at most; beyond it the least recently used one ends (and a user's 17th)",
        }),
      },
      { additionalProperties: false, default: {}, description: "Console sessions (kept in memory)" },
    ),
  },
  {
    additionalProperties: false,
    default: {},
    description: "Signing in to the web console with OpenID Connect (docs/console.md)",
  },
);

/** Coordination engines a cluster can keep its leases in (src/cluster/engines.ts). */
export const ClusterBackends = ["kubernetes", "etcd"] as const;
export type ClusterBackend = (typeof ClusterBackends)[number];

/**
 * A replica's member name: an RFC 1123 subdomain of at most 63 characters (lower-case letters,
 * digits, `-` and `.`), so that it fits a Kubernetes Lease name, an MQTT client id and a label.
 */
export const MemberNamePattern = "^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$";

/** An entry of `Cluster.PeerNetworks`: a CIDR network, a host name, or a DNS suffix starting with a dot. */
export const PeerNetworkPattern =
  "^([0-9a-fA-F:.]+/[0-9]{1,3}|\\.?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*)$";

/** Where advertised URLs may point by default: the private (RFC 1918), unique-local and loopback networks. */
export const DEFAULT_PEER_NETWORKS = [
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "127.0.0.0/8",
  "fc00::/7",
  "::1/128",
] as const;

/** `Cluster.AdvertiseUrl`: an http(s) origin (scheme, host, port), no path, query or user. */
export const ADVERTISE_URL_PATTERN = "^https?://[^/?#@\\s]+/?$";

const clusterSeconds = (description: string, minimum: number, defaultSeconds: number) =>
  Type.Number({ minimum, maximum: 3600, default: defaultSeconds, description });

export const ClusterSchema = Type.Object(
  {
    Enabled: Type.Boolean({
      default: false,
      description:
        "Run as one of several replicas sharing the fleet through leases (docs/cluster.md); false: this process owns every instance",
    }),
    Backend: Type.Enum(ClusterBackends, {
      default: "kubernetes",
      description:
        "Where the leases live: kubernetes (coordination.k8s.io/v1 Leases, in a cluster) or etcd (v3, anywhere else)",
    }),
    MemberName: Type.Union([Type.String({ pattern: MemberNamePattern }), Type.Null()], {
      default: null,
      description:
        "This replica's name, unique among the replicas (lower-case letters, digits, - and ., at most 63); null: HOSTNAME (the pod name), else the host name, lower-cased",
    }),
    AdvertiseUrl: Type.Union([Type.String({ maxLength: 300, pattern: ADVERTISE_URL_PATTERN }), Type.Null()], {
      default: null,
      description:
        "How the other replicas reach this replica's REST API to hand it the control and settings requests of the instances it holds (http://10.0.3.7:8082: scheme, host and port, no path); null: Api.Bind when it names one address, else the first non-loopback IPv4 address of the host (the pod's IP), with Api.Port and https when Api.Tls is set",
    }),
    PeerNetworks: Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: PeerNetworkPattern }), {
      maxItems: 64,
      default: [...DEFAULT_PEER_NETWORKS],
      description:
        "Where another replica's advertised URL (AdvertiseUrl, read from its member lease) may point: networks in CIDR form (10.244.0.0/16, fd00::/8) for an IP address, host names (pdu-0.pdu.racks.svc) or DNS suffixes starting with a dot (.pdu.racks.svc.cluster.local) for a name; a URL elsewhere is never sent a request. Default: the private, unique-local and loopback networks",
    }),
    Buckets: Type.Integer({
      minimum: 1,
      maximum: 1024,
      default: 64,
      description:
        "Number of bucket leases the instances are spread over (an instance's bucket is a hash of its id); fixed for an installation; 1: active/standby",
    }),
    LeaseDurationSeconds: clusterSeconds(
      "How long a lease stays with a holder that stopped renewing it, as seen by the other replicas",
      1,
      15,
    ),
    RenewDeadlineSeconds: clusterSeconds(
      "A holder that has not renewed a lease within this time stops polling, publishing and writing for it; less than LeaseDurationSeconds",
      0.5,
      10,
    ),
    RetryPeriodSeconds: clusterSeconds(
      "Time between renewals and attempts to acquire; RetryPeriodSeconds * 1.2 must be less than RenewDeadlineSeconds",
      0.1,
      2,
    ),
    Kubernetes: Type.Object(
      {
        Namespace: Type.Union(
          [Type.String({ pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" }), Type.Null()],
          { default: null, description: "Namespace of the Leases; null: the pod's own" },
        ),
        LeasePrefix: Type.String({
          pattern: "^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$",
          default: "pdu-bridge",
          description:
            "Start of every Lease name (<prefix>-member-<name>, <prefix>-bucket-<n>, <prefix>-config) and the value of their pdu-bridge/lease-prefix label",
        }),
      },
      { additionalProperties: false, default: {}, description: "The Kubernetes backend" },
    ),
    Etcd: Type.Object(
      {
        Endpoints: Type.Array(Type.String({ pattern: "^https?://[^/?#\\s]+/?$" }), {
          minItems: 1,
          maxItems: 16,
          uniqueItems: true,
          default: ["http://127.0.0.1:2379"],
          description:
            "Client URLs of the etcd members (http:// or https://, no path, no credentials: those come from SERVICE_ETCD_USERNAME / _PASSWORD); requests go to the next one when one fails",
        }),
        Prefix: Type.String({
          minLength: 1,
          maxLength: 200,
          pattern: "^/(.*/)?$",
          default: "/pdu-bridge/",
          description: "Key prefix of every lease (starts and ends with /)",
        }),
        CaFile: nullableString(
          "PEM file of the CA for https:// endpoints; credentials come from SERVICE_ETCD_USERNAME and SERVICE_ETCD_PASSWORD",
        ),
        CertFile: nullableString(
          "PEM file of this replica's client certificate, for etcd with --client-cert-auth (with KeyFile)",
        ),
        KeyFile: nullableString("PEM file of the client certificate's private key (with CertFile)"),
      },
      { additionalProperties: false, default: {}, description: "The etcd v3 backend" },
    ),
  },
  {
    additionalProperties: false,
    default: {},
    description: "Several replicas sharing the fleet through leases (docs/cluster.md)",
  },
);

export const ConfigSchema = Type.Object(
  {
    Mqtt: MqttSchema,
    Pdus: Type.Record(Type.String({ pattern: InstanceIdPattern }), PduSchema, {
      minProperties: 1,
      description:
        "Map of instance id to PDU; at least one. The primary instance is `default`, else the first.",
    }),
    HomeAssistant: Type.Object(
      {
        DiscoveryEnabled: Type.Boolean({
          default: true,
          description: "Publish Home Assistant MQTT discovery",
        }),
        DiscoveryTopic: Type.String({
          minLength: 1,
          pattern: "^[^#+]+$",
          default: "homeassistant",
          description: "Home Assistant discovery prefix",
        }),
        SensorExpireAfterSeconds: Type.Integer({
          minimum: 0,
          maximum: 86400,
          default: 300,
          description:
            "expire_after of every sensor; values are republished at least every half of it (0: never expire)",
        }),
      },
      { additionalProperties: false, default: {}, description: "Home Assistant MQTT discovery" },
    ),
    Alarms: Type.Object(
      {
        WarnPercent: Type.Number({
          minimum: 10,
          maximum: 150,
          default: 80,
          description:
            "A current at or above this percent of its rating is a warning, until it falls 5 points below",
        }),
        CriticalPercent: Type.Number({
          minimum: 10,
          maximum: 200,
          default: 95,
          description:
            "A current at or above this percent of its rating is critical, until it falls 5 points below; above WarnPercent",
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: "Load states of currents against their ratings (docs/alarms.md)",
      },
    ),
    Api: Type.Object(
      {
        Enabled: Type.Boolean({ default: false, description: "Turn the REST API listener on" }),
        Port: port("REST API port", 8082),
        Bind: Type.String({
          minLength: 1,
          default: "0.0.0.0",
          description: "Address the REST API listens on",
        }),
        ApiKey: Type.String({
          default: "",
          description:
            "Non-empty (at least 16 printable ASCII characters, no whitespace, not one character repeated) enables the control endpoints; a secret: set SERVICE_API_KEY or SERVICE_API_KEY_FILE instead",
        }),
        TrustedProxies: Type.Array(Type.String({ minLength: 1 }), {
          default: [],
          maxItems: 64,
          description:
            "Exact IP addresses of reverse proxies (e.g. the Ingress controller) whose X-Forwarded-For names the client, for the lock-out and the audit log; others' X-Forwarded-For is ignored",
        }),
        Worker: Type.Boolean({
          default: true,
          description:
            "Run the REST API listener in a worker thread that answers GET /api/v1/health and /api/v1/readings from a mirror of the snapshots and passes every other request to the main thread (docs/architecture.md); false serves every request on the main thread, beside polling",
        }),
        PublicUrl: nullableString(
          "How browsers reach the REST API and the console (https://pdu.example.com): the origin of the sign-in's redirect URIs, the cookies and the cross-site check; required with Api.Oidc.Enabled (never taken from a request's Host header)",
        ),
        Tls: Type.Object(
          {
            CertFile: nullableString(
              "PEM file of the REST API's certificate (and its chain); with KeyFile, Api.Port speaks HTTPS",
            ),
            KeyFile: nullableString("PEM file of the certificate's private key"),
          },
          {
            additionalProperties: false,
            default: {},
            description: "HTTPS on the REST API listener when both files are set",
          },
        ),
        Oidc: OidcSchema,
      },
      { additionalProperties: false, default: {}, description: "The REST API listener" },
    ),
    Health: Type.Object(
      {
        Enabled: Type.Boolean({ default: true, description: "Turn the health listener on" }),
        Port: port("Health listener port", 8081),
        Bind: Type.String({
          minLength: 1,
          default: "0.0.0.0",
          description: "Address the health listener listens on",
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: "The health listener (/healthz, /readyz, /health/integrations)",
      },
    ),
    Metrics: Type.Object(
      {
        Enabled: Type.Boolean({
          default: true,
          description: "Serve Prometheus metrics on the health listener (needs Health.Enabled)",
        }),
        Path: Type.String({
          pattern: "^/[A-Za-z0-9._~/-]*$",
          maxLength: 128,
          default: "/metrics",
          description: "Path of the metrics endpoint on the health listener",
        }),
      },
      { additionalProperties: false, default: {}, description: "Prometheus metrics (docs/metrics.md)" },
    ),
    Http: Type.Object(
      {
        RequestTimeout: Type.Number({
          exclusiveMinimum: 0,
          maximum: 3600,
          default: 30,
          description:
            "Seconds a client has to send a whole request (headers and body); then the connection is closed",
        }),
        HeadersTimeout: Type.Number({
          exclusiveMinimum: 0,
          maximum: 3600,
          default: 10,
          description:
            "Seconds a client has to send a request's headers (also the time a new connection may stay silent); at most RequestTimeout",
        }),
        KeepAliveTimeout: Type.Number({
          exclusiveMinimum: 0,
          maximum: 3600,
          default: 5,
          description: "Seconds an idle keep-alive connection is kept open between requests",
        }),
        MaxConnections: Type.Integer({
          minimum: 1,
          maximum: 1000000,
          default: 1024,
          description:
            "Open connections each listener accepts at most; further ones are closed at once. The last sixteenth is kept for clients holding fewer than 2 (probes, scrapes, a new console)",
        }),
        MaxConnectionsPerClient: Type.Integer({
          minimum: 1,
          maximum: 1000000,
          default: 32,
          description:
            "Open connections one client (an IPv4 address, an IPv6 /64) may hold on each listener; further ones are closed at once. Api.TrustedProxies are not held to it",
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: "Limits of both HTTP listeners (REST API and health), against slow or idle clients",
      },
    ),
    Cluster: ClusterSchema,
    Traps: Type.Object(
      {
        Enabled: Type.Boolean({
          default: false,
          description:
            "Receive SNMP traps (v1, v2c, v3) from the SNMP instances' PDUs: each accepted trap polls its instance at once and becomes an event (docs/events.md)",
        }),
        Port: Type.Integer({
          minimum: 1,
          maximum: 65535,
          default: 1162,
          description:
            "UDP port of the trap receiver (162 needs privileges: the chart maps 162 to it); v2c communities from SERVICE_TRAP_COMMUNITIES (comma-separated), v3 users those of the SNMP instances",
        }),
      },
      { additionalProperties: false, default: {}, description: "The SNMP trap receiver (docs/events.md)" },
    ),
    ...assetSections,
    State: Type.Object(
      {
        Dir: Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()], {
          default: null,
          description:
            "A directory the bridge owns, where it keeps the checkpoint of the lifetime energy counters (energy.json; the chart: a PersistentVolume); null: memory only, the counters start again from the PDUs' own at every start. Among several replicas the coordination engine keeps them instead (docs/energy.md)",
        }),
      },
      { additionalProperties: false, default: {}, description: "What the bridge keeps across restarts" },
    ),
    Webhooks: Type.Array(
      Type.Object(
        {
          Url: Type.String({
            minLength: 1,
            maxLength: 2048,
            description:
              "Where each event is POSTed: https only, unless AllowHttp is true. The URL is never logged or shown whole (only its host), since it may hold a token",
          }),
          AllowHttp: Type.Boolean({
            default: false,
            description: "Accept a plain http:// Url (a receiver on a trusted network)",
          }),
          Name: Type.Union(
            [Type.String({ minLength: 1, maxLength: 63, pattern: "^[a-z0-9][a-z0-9_-]*$" }), Type.Null()],
            {
              default: null,
              description:
                "The receiver's label in metrics, health and logs; null: its position in the list (0, 1, ...)",
            },
          ),
          Events: Type.Array(
            Type.Union([
              Type.Literal("alarm"),
              Type.Literal("control"),
              Type.Literal("availability"),
              Type.Literal("sequence"),
            ]),
            {
              minItems: 1,
              uniqueItems: true,
              default: ["alarm", "control", "availability", "sequence"],
              description: "The kinds of event sent to this receiver",
            },
          ),
          Timeout: Type.Number({
            exclusiveMinimum: 0,
            maximum: 60,
            default: 5,
            description:
              "Seconds a delivery may take (connecting, the answer's headers and its body); a delivery that takes longer is retried",
          }),
          RetryMaxDelay: Type.Number({
            exclusiveMinimum: 0,
            maximum: 3600,
            default: 300,
            description:
              "Longest wait between two attempts at the receiver's oldest event, in seconds: the wait starts at 1 s (or this, if shorter) and doubles up to it",
          }),
          CaFile: Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()], {
            default: null,
            description:
              "A PEM file of certificate authorities trusted for this receiver besides the system's (a private CA); a path relative to the configuration file's directory",
          }),
          MaxQueue: Type.Integer({
            minimum: 1,
            maximum: 10000,
            default: 10000,
            description:
              'Undelivered events kept for the receiver at most; a new one beyond it drops the oldest (counted in pdu_webhook_deliveries_total{outcome="dropped"})',
          }),
        },
        { additionalProperties: false },
      ),
      {
        maxItems: 16,
        default: [],
        description:
          "Receivers of signed webhooks (docs/events.md, Webhooks); each one's signing secret from SERVICE_WEBHOOK_<N>_SECRET (or _FILE), N its position from 0",
      },
    ),
    Energy: Type.Object(
      {
        LifetimeCounters: Type.Boolean({
          default: true,
          description:
            "Keep the lifetime energy counters (energyLifetime topics and sensors, pdu_*_energy_lifetime_wh_total, their checkpoints); false: none of them, the PDUs' own counters only (docs/energy.md)",
        }),
        ReportSource: Type.Union(
          [Type.String({ maxLength: 2048, pattern: "^https?://[^\\s?#]+$" }), Type.Null()],
          {
            default: null,
            description:
              "Base URL of a Prometheus that scrapes the bridge's metrics (http://prometheus:9090); GET /api/v1/energy reports periods from it (increase() of the lifetime counters); null: the report answers 409",
          },
        ),
      },
      {
        additionalProperties: false,
        default: {},
        description: "Lifetime energy counters and reports (docs/energy.md)",
      },
    ),
    Logging: Type.Object(
      {
        Level: Type.Enum(LogLevels, {
          default: "info",
          description: "Least severe level logged",
          appliesLive: true,
        }),
      },
      { additionalProperties: false, default: {}, description: "Logging to stdout (JSON lines)" },
    ),
  },
  { additionalProperties: false, title: "pdu-bridge configuration" },
);

/** The file as validated, with schema defaults applied (inferred values may still be missing). */
export type FileConfig = Static<typeof ConfigSchema>;
export type PduFileConfig = Static<typeof PduSchema>;
export type OverridesConfig = Static<typeof OverridesSchema>;
export type RatingsConfig = Static<typeof RatingsSchema>;
export type AlarmsConfig = Static<typeof ConfigSchema>["Alarms"];

/** One configured PDU instance, fully resolved (ports and schemes inferred, secrets merged). */
export interface InstanceConfig extends Omit<PduFileConfig, "Connection"> {
  /** The instance id (the key under `Pdus`). */
  readonly id: string;
  /** True for the instance named `default`, else the first in the file. */
  readonly primary: boolean;
  readonly Connection: Static<typeof PduConnectionSchema> & { Port: number; Scheme: PduScheme };
  /**
   * Where `Credentials` came from (a variable or the file's key), for messages that say what to
   * fix; absent where an instance was built without the loader.
   */
  readonly credentialSources?: { readonly Username: string | null; readonly Password: string | null };
}

export type MqttConfig = Omit<Static<typeof MqttSchema>, "Connection"> & {
  Connection: Static<typeof MqttConnectionSchema> & {
    /** null: use the embedded broker. */
    Host: string | null;
    Port: number;
    Scheme: MqttScheme;
  };
};

/** `Cluster` resolved: the member name filled in, the etcd credentials merged from the environment. */
export type ClusterConfig = Omit<Static<typeof ClusterSchema>, "MemberName" | "Etcd"> & {
  readonly MemberName: string;
  /**
   * The secret the replicas sign their requests to each other with, from SERVICE_CLUSTER_SECRET (or
   * its _FILE form); never in the file; "" when not set.
   */
  readonly Secret: string;
  readonly Etcd: Static<typeof ClusterSchema>["Etcd"] & {
    /** From SERVICE_ETCD_USERNAME / SERVICE_ETCD_PASSWORD (or their _FILE forms); never in the file. */
    readonly Credentials: { readonly Username: string | null; readonly Password: string | null };
  };
};

/** `Traps` resolved: the v2c communities read from SERVICE_TRAP_COMMUNITIES (never in the file). */
export type TrapsConfig = Static<typeof ConfigSchema>["Traps"] & { readonly Communities: readonly string[] };

/** The effective configuration the service runs with. */
export interface Config extends Omit<FileConfig, "Pdus" | "Mqtt" | "Cluster" | "Traps"> {
  readonly Mqtt: MqttConfig;
  /**
   * The signing secret of each of `Webhooks`, by position (SERVICE_WEBHOOK_<N>_SECRET); outside the
   * schema, so that check-config and the configuration's reference never show them.
   */
  readonly webhookSecrets?: readonly string[];
  readonly Traps: TrapsConfig;
  readonly Cluster: ClusterConfig;
  /** Instances in file order (a map would reorder integer-like ids). */
  readonly instances: readonly InstanceConfig[];
  /** Where the configuration came from, for messages (`/config/config.yaml`, `configmap ns/name`). */
  readonly origin: string;
}
