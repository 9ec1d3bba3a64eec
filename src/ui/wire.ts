/**
 * What the web console receives (docs/console.md): the data of the server-sent events on
 * `GET /api/v1/events` and the answer of the outlet history endpoint. Types only, shared by the
 * service (src/ui/feed.ts) and the page (src/ui/page/), so both sides agree at compile time.
 */

export interface WireAlarm {
  readonly state: string;
  readonly severity: string;
  readonly raised: boolean;
}

export interface WireMeasurement {
  readonly type: string;
  readonly value: number | null;
  readonly units: string;
  readonly alarm: WireAlarm | null;
}

/** A current against its rating (a phase, breaker or other load entity, or a rated outlet). */
export interface WireLoad {
  /** Amps; null when the PDU reports none that is a number. */
  readonly current: number | null;
  /** Rated amps (the PDU's, else the configuration's); null: none. */
  readonly rating: number | null;
  /** Whole percent of the rating; null without one. */
  readonly percent: number | null;
  /** With hysteresis, and what the PDU reports about the thing folded in. */
  readonly state: "normal" | "warning" | "critical";
}

export interface WireOutlet {
  readonly index: number;
  /** Display name: label, else name, else `Outlet <index+1>`. */
  readonly name: string;
  /** The state the service reports (a commanded on/off shows at once, latched until a poll agrees). */
  readonly state: "on" | "off" | "unknown";
  /** The state the PDU itself reported in the last poll. */
  readonly reported: "on" | "off" | "unknown";
  readonly alarm: WireAlarm;
  readonly measurements: readonly WireMeasurement[];
  /** Its load, where the outlet has a rating; null otherwise. */
  readonly load: WireLoad | null;
  /** Present (true) only when the configuration's overrides hide the outlet, as in REST readings. */
  readonly hidden?: true;
}

export interface WireEntity {
  readonly key: string;
  readonly name: string;
  readonly alarm: WireAlarm;
  readonly measurements: readonly WireMeasurement[];
  /** Its load (phases, banks, breakers, inlets, ...; any rated entity); null otherwise. */
  readonly load: WireLoad | null;
  /** Present (true) only when the configuration's overrides hide the entity. */
  readonly hidden?: true;
}

/** The PDU unit a device lives in (a OneView member, or the polled unit). */
export interface WireUnit {
  readonly label: string;
  readonly model: string;
  readonly serialNumber: string;
  readonly macAddress: string;
  /** The member's key in the master's host map; null for the polled unit itself. */
  readonly hostKey: string | null;
}

export interface WireDevice {
  readonly id: string;
  readonly name: string;
  readonly state: string;
  readonly alarm: WireAlarm;
  readonly outletControlEnabled: boolean;
  /** Whether the driver can reset an outlet's energy statistics (the model's `Device.canResetOutletEnergy`). */
  readonly canResetOutletEnergy: boolean;
  /** Whether the outlets can be switched (the model's `Device.canSwitchOutlets`). */
  readonly canSwitchOutlets: boolean;
  readonly unit: WireUnit;
  readonly outlets: readonly WireOutlet[];
  readonly entities: readonly WireEntity[];
}

export interface WireGroupMeasurement {
  readonly key: string;
  readonly type: string;
  readonly units: string;
  readonly sum: number | null;
  readonly avg: number | null;
  readonly min: number | null;
  readonly max: number | null;
}

export interface WireGroup {
  readonly key: string;
  readonly name: string;
  readonly state: string;
  readonly members: readonly { readonly deviceId: string; readonly index: number }[];
  readonly measurements: readonly WireGroupMeasurement[];
  /** Present (true) only when the configuration's overrides hide the group. */
  readonly hidden?: true;
}

/** Data of a `snapshot` event: the latest snapshot of one instance. */
export interface SnapshotEventData {
  readonly instanceId: string;
  readonly timestampUtc: string;
  readonly mode: "single" | "oneview";
  readonly actionsEnabled: boolean;
  readonly unit: WireUnit;
  readonly devices: readonly WireDevice[];
  readonly groups: readonly WireGroup[];
  /** The instance's active alarms, worst first (hidden things left out). */
  readonly alarms: readonly WireActiveAlarm[];
}

export type InstanceState = "online" | "failing" | "pending";

/**
 * Among several replicas (docs/console.md, "Among several replicas"): which replica polls the
 * instance, and whose state the status and snapshots show. Absent in one process.
 */
export interface WireReplica {
  /** The member polling it, as the replica serving the page last saw; null: no replica holds it now. */
  readonly holder: string | null;
  /** Whether that is the replica serving the page. */
  readonly here: boolean;
  /**
   * Whose state the status shows: this replica's own polls (`own`), the holder's latest, asked of
   * it (`holder`), or none (`none`: nobody holds it, or the holder's state cannot be had; `note`
   * says why, and every value of the status is empty rather than an old one).
   */
  readonly state: "own" | "holder" | "none";
  /** Why there is no state (`none`); null otherwise. */
  readonly note: string | null;
}

export interface WireInstanceStatus {
  readonly id: string;
  /** `pending`: not polled successfully yet and no failure either. */
  readonly status: InstanceState;
  readonly host: string;
  readonly pollInterval: number;
  readonly actionsEnabled: boolean;
  readonly mode: "single" | "oneview" | null;
  readonly lastPollUtc: string | null;
  readonly lastSuccessUtc: string | null;
  readonly lastError: string | null;
  readonly consecutiveFailures: number;
  /** Devices in the latest snapshot; null before the first successful poll. */
  readonly devices: number | null;
  readonly outlets: number | null;
  /** Sum of the outlets' `realPower` in watts; null when no outlet reports one. */
  readonly powerW: number | null;
  /**
   * Why control of the instance will fail: the PDU refused the login checked at start, and what to
   * fix (the variable or key); null otherwise.
   */
  readonly loginError: string | null;
  /** The polled unit's label and model (what the fleet's search matches); null before a poll. */
  readonly label: string | null;
  readonly model: string | null;
  /** Active alarms by severity (hidden things left out). */
  readonly alarms: { readonly critical: number; readonly warning: number };
  /**
   * The most loaded phase, bank, breaker or other load entity: the highest share of its rating,
   * else the highest current; null when none reports a current.
   */
  readonly peak: (WireLoad & { readonly name: string }) | null;
  /** Among several replicas: who polls it and whose state this is; absent in one process. */
  readonly replica?: WireReplica;
}

/** Data of a `status` event: every instance on connect, then the ones that changed. */
export interface StatusEventData {
  readonly instances: readonly WireInstanceStatus[];
}

/** Data of a `control` event: the outcome of a control request (REST, the signed-in console or MQTT). */
export interface ControlEventData {
  readonly instanceId: string;
  readonly target:
    | { readonly kind: "outlet"; readonly deviceId: string; readonly index: number }
    | { readonly kind: "group"; readonly groupKey: string };
  readonly action: string;
  readonly ok: boolean;
  readonly status: number;
  /** What went wrong; null when ok. */
  readonly detail: string | null;
  readonly source: "rest" | "console" | "mqtt";
  /** The signed-in console user who asked (source `console`); null otherwise. */
  readonly user: { readonly sub: string; readonly name: string } | null;
  readonly atUtc: string;
  /** Among several replicas: the replica that carried it out (decided its outcome). */
  readonly by?: string;
}

/**
 * Data of a `reconnect` event: the service ends the stream right after it (the stream reached its
 * maximum age); the client should open a new one at once (the page does; EventSource would after
 * the `retry:` delay), and gets the full current state again.
 */
export interface ReconnectEventData {
  readonly reason: "age";
}

/** An active alarm (as `GET /api/v1/alarms` lists it, without `stale`). */
export interface WireActiveAlarm {
  readonly instanceId: string;
  /** Unique within the instance while it lasts. */
  readonly id: string;
  readonly deviceId: string;
  readonly target:
    | { readonly kind: "outlet"; readonly index: number }
    | { readonly kind: "entity"; readonly key: string }
    | { readonly kind: "device" };
  readonly name: string;
  /** `redundancy` and `feed-loss`: the alarms about several PDUs, `instanceId` `$assets` or `$feeds`. */
  readonly source: "load" | "tripped" | "breaker-trip-suspected" | "pdu" | "redundancy" | "feed-loss";
  readonly severity: "warning" | "critical";
  readonly percent: number | null;
  readonly reported: string | null;
  readonly sinceUtc: string;
}

/** Data of an `alarms` event (on connect): every active alarm of every instance, worst first. */
export interface AlarmsEventData {
  readonly alarms: readonly WireActiveAlarm[];
}

/** Data of an `alarm` event: an alarm raised, changed (its severity) or cleared. */
export interface AlarmEventData {
  readonly change: "raised" | "changed" | "cleared";
  readonly atUtc: string;
  /** The alarm as it is now; a cleared one as it was. */
  readonly alarm: WireActiveAlarm;
  /** Among several replicas: the replica whose poll changed it (the instance's holder). */
  readonly by?: string;
}

/**
 * Data of a `trap` event: what an SNMP trap from an instance's PDU told (docs/events.md, "SNMP
 * traps"), as the bus's `trap` event has it. `label` and `state` are the PDU's words: untrusted
 * text, shown as text.
 */
export interface TrapEventData {
  readonly instanceId: string;
  readonly atUtc: string;
  readonly trap: {
    readonly kind:
      "outlet-switched" | "breaker-tripped" | "load-state" | "sensor" | "unit-restarted" | "other";
    /** The notification's name in its MIB, or the trap OID. */
    readonly name: string;
    /** The PDU's own 1-based outlet number, when the trap names one. */
    readonly outlet: number | null;
    readonly state: string | null;
    readonly label: string | null;
  };
  /** Among several replicas: the replica that received it (the instance's holder). */
  readonly by?: string;
}

/** One entry of the recent events: an alarm change, a control outcome or a trap. */
export type WireRecentEvent =
  | ({ readonly kind: "alarm" } & AlarmEventData)
  | ({ readonly kind: "control" } & ControlEventData)
  | ({ readonly kind: "trap" } & TrapEventData);

/** Data of a `recent` event (on connect): the latest events, newest first. */
export interface RecentEventData {
  readonly events: readonly WireRecentEvent[];
}

/** A command as the console's buttons show it (from the command table, src/control/commands.ts). */
export interface WireCommand {
  readonly name: string;
  /** The button's text. */
  readonly label: string;
  /** The confirmation's verb ("Switch off"). */
  readonly verb: string;
  /** What the target shows while it runs ("Switching off…"). */
  readonly progress: string;
  /** What the target shows once the service answered; null: wait for the PDU's reported state. */
  readonly done: string | null;
  /** The state the outlet shows after it (its button is disabled while the outlet is in it). */
  readonly latches: "on" | "off" | null;
  /** How the button looks. */
  readonly tone: "on" | "off" | "restart" | "reset";
  /** The device's field that must be true for the button to be shown (the row's `needs`); null: always. */
  readonly needs: "canResetOutletEnergy" | "canSwitchOutlets" | null;
}

/** What the page is served with (a JSON block in `/ui/`). */
export interface ConsoleBootstrap {
  readonly commands: { readonly outlet: readonly WireCommand[]; readonly group: readonly WireCommand[] };
  readonly alarms: { readonly warnPercent: number; readonly criticalPercent: number };
  /** `Api.Oidc.Enabled`: the page asks `/ui/auth/session` who is signed in only when it is on. */
  readonly signIn: boolean;
}

/** `GET /api/v1/instances/{id}/outlets/{deviceId}/{index}/history`. */
export interface OutletHistory {
  readonly instanceId: string;
  readonly deviceId: string;
  readonly index: number;
  readonly type: "realPower";
  readonly units: "W";
  /** Epoch milliseconds of each poll, oldest first. */
  readonly times: readonly number[];
  /** Watts at each time; null where the outlet reported no number. */
  readonly values: readonly (number | null)[];
}

/**
 * Data of an `assets` event: assets changed since the last one (their state, a figure, or a live
 * change of the configuration), or the feed-loss projection was made again. Folded: at most one
 * event per {@link ASSETS_EVENT_MS}. The page reads what changed from `GET /api/v1/assets` and
 * `/feeds`, the answers the REST surface gives.
 */
export interface AssetsEventData {
  /** How many asset changes were folded into this event. */
  readonly changed: number;
  /** The feed-loss projection (and the feeds' totals) was made again. */
  readonly feeds: boolean;
  /** A live change of the configuration built the assets again: any may have changed or gone. */
  readonly reconfigured: boolean;
}

/** At most one `assets` event per this many milliseconds. */
export const ASSETS_EVENT_MS = 500;

/** One cord of an asset, as `GET /api/v1/assets` answers it. */
export interface WireCord {
  readonly cord: number;
  readonly instanceId: string;
  readonly deviceId: string | null;
  readonly index: number;
  readonly status: "live" | "off" | "unknown";
  readonly outletState: string | null;
  readonly problem: string | null;
  readonly detail: string | null;
  readonly power: number | null;
  readonly current: number | null;
  readonly energy: number | null;
  readonly feedsFrom: string | null;
  readonly feed: string | null;
}

/** An asset, as `GET /api/v1/assets` answers it. */
export interface WireAsset {
  readonly id: string;
  readonly label: string;
  readonly protected: boolean;
  readonly priority: number;
  readonly tenant: string | null;
  readonly tags: readonly string[];
  readonly startSeconds: number;
  readonly state: "on" | "off" | "partial" | "unknown";
  readonly power: number | null;
  readonly current: number | null;
  readonly energy: number | null;
  readonly cordsLive: number;
  readonly cords: number;
  readonly redundancy: "ok" | "single" | "lost";
  readonly readings: readonly WireCord[];
}

/** One entity of a feed-loss projection, as `GET /api/v1/feeds` answers it. */
export interface WireProjectedEntity {
  readonly instanceId: string;
  readonly deviceId: string;
  readonly key: string;
  readonly name: string;
  readonly measured: number;
  readonly added: number;
  readonly projected: number;
  readonly rating: number | null;
  readonly ratio: number | null;
  readonly exact: boolean;
}

/** A feed, as `GET /api/v1/feeds` answers it. */
export interface WireFeed {
  readonly id: string;
  readonly label: string;
  readonly power: number | null;
  readonly current: number | null;
  readonly devices: number;
  readonly unseen: readonly string[];
  readonly ifLost: {
    readonly entities: readonly WireProjectedEntity[];
    readonly dark: readonly string[];
    readonly atRisk: readonly string[];
    readonly unplaced: readonly {
      readonly instanceId: string;
      readonly deviceId: string;
      readonly amps: number;
    }[];
    readonly unseen: readonly string[];
    readonly madeUtc: string | null;
  };
  /** Its active `feed-loss` alarms, each naming the instance of the entity (`entityInstanceId`). */
  readonly alarms: readonly (WireActiveAlarm & { readonly entityInstanceId?: string })[];
}
