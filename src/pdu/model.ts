/**
 * The normalised snapshot model: the one description of a PDU's state that every surface
 * (MQTT topics, Home Assistant discovery, REST readings, control validation) derives from.
 *
 *   Snapshot (one per configured instance, one poll)
 *     ├─ system            identity of the polled unit (the master in OneView mode)
 *     ├─ devices[]         every device of every host, sorted by id
 *     │    ├─ outlets[]    sorted numerically by index
 *     │    │    └─ measurements[]
 *     │    └─ entities[]   sorted by key (phase0, breaker0, total0 ...)
 *     │         └─ measurements[]
 *     └─ groups[]          OneView groups with resolved member outlets and rollups
 *
 * Everything here is plain data (no classes, no Dates) so that snapshots can be frozen, compared
 * and serialised cheaply. Times are epoch milliseconds.
 */

/**
 * The one definition of "alarm raised": `alarm.state` equal to one of these, ignoring case and
 * surrounding blanks. `none`, blank and anything else is clear. The drivers' {@link Alarm.raised}
 * and the Home Assistant alarm template both derive from this list: Geist's raised states first,
 * then the raised states of the SNMP families' enumerations (load states, breaker trips, sensor
 * thresholds, as the MIBs name them; docs/snmp.md lists them).
 */
export const RAISED_ALARM_STATES: readonly string[] = Object.freeze([
  "alarm",
  "active",
  // APC PowerNet-MIB load and sensor states
  "lowload",
  "nearoverload",
  "overload",
  "phaseloadlow",
  "phaseloadnearoverload",
  "phaseloadoverload",
  "belowmin",
  "belowlow",
  "abovehigh",
  "abovemax",
  // Raritan sensor states and breakers (an open overcurrent protector has tripped)
  "belowlowercritical",
  "belowlowerwarning",
  "aboveupperwarning",
  "aboveuppercritical",
  "open",
  "tripped",
  // ServerTech DeviceStatus
  "lost",
  "readerror",
  "nocomm",
  "pwrerror",
  "breakertripped",
  "fuseblown",
  "lowalarm",
  "lowwarning",
  "highwarning",
  "highalarm",
  "underlimit",
  "overlimit",
  "nvmfail",
  "profileerror",
  "conflict",
  // CyberPower CPS-MIB load states and current alarms
  "loadlow",
  "loadnearoverload",
  "loadoverload",
  "undercurrentalarm",
  "nearovercurrentalarm",
  "overcurrentalarm",
  // Eaton EATON-EPDU-MIB threshold states and breakers
  "lowcritical",
  "highcritical",
  "breakeroff",
  // ServerTech Sentry3-MIB tower and load states
  "fanfail",
  "overtemp",
  "outofbalance",
  "loadhigh",
]);

/** True when an `alarm.state` means raised (see {@link RAISED_ALARM_STATES}). */
export function isAlarmRaised(state: string): boolean {
  return RAISED_ALARM_STATES.includes(state.trim().toLowerCase());
}

/** `alarm.state` / `alarm.severity` as the PDU reports them, plus the derived flag. */
export interface Alarm {
  /** Raw `alarm.state` ("none", "", "alarm", "active", ...). Blank becomes "none". */
  readonly state: string;
  /** Raw `alarm.severity` ("alarm", "warning" or ""). */
  readonly severity: string;
  /** {@link isAlarmRaised} of the state. */
  readonly raised: boolean;
}

export interface Measurement {
  /** The PDU's measurement type, camelCase as reported (`realPower`, `energy`, ...). Unique within its parent. */
  readonly type: string;
  /** Parsed number, or null when the PDU's string is not a finite number (`"n/a"`, `""`). */
  readonly value: number | null;
  /** Units exactly as the PDU reports them (`W`, `kWh`, `A`, ...). May be empty. */
  readonly units: string;
  /** Present only where the PDU has a threshold configured. */
  readonly alarm: Alarm | null;
  /**
   * Where a counter wraps back to 0, in `units` (an energy counter the PDU keeps in 32 bits: 2^32
   * of its steps); absent: it does not wrap, or the driver does not know. The lifetime energy
   * counters read it (docs/energy.md).
   */
  readonly wrapsAt?: number;
}

export type OutletState = "on" | "off" | "unknown";

export interface Outlet {
  /** 0-based index: the PDU's own map key as a number. Key "0" is what the PDU's UI calls "Outlet 1". */
  readonly index: number;
  readonly name: string;
  readonly label: string;
  /** label, else name, else `Outlet <index+1>`. */
  readonly displayName: string;
  readonly state: OutletState;
  readonly alarm: Alarm;
  readonly onDelay: number | null;
  readonly offDelay: number | null;
  readonly rebootDelay: number | null;
  readonly poaAction: string | null;
  /** Sorted by type (case-insensitive). */
  readonly measurements: readonly Measurement[];
  /** The outlet's rated current in amps, where the PDU reports one; absent: not reported. */
  readonly ratedCurrent?: number;
  /**
   * The key of the entity of the same device that this outlet draws through (a breaker, bank or
   * phase: `breaker1`, `bank0`, `phase2`), where the PDU says so or the instance's
   * `OutletCircuits` configuration does (src/assets/circuits.ts); absent: not known. The feed-loss
   * projection adds an asset's current to it, and an inferred breaker trip reads which outlets a
   * breaker feeds from it (docs/assets.md).
   */
  readonly feedsFrom?: string;
  /** Set by the configured overrides (src/pdu/overrides.ts); absent: not set. */
  readonly renamed?: true;
  readonly hidden?: true;
  readonly protected?: true;
}

export interface Entity {
  /** Map key in the device's `entity` object (`phase0`, `breaker1`, `total0`, ...). */
  readonly key: string;
  readonly name: string;
  readonly label: string;
  /** label, else name, else key. */
  readonly displayName: string;
  readonly alarm: Alarm;
  /** Sorted by type (case-insensitive). May be empty. */
  readonly measurements: readonly Measurement[];
  /**
   * Rated current in amps of the breaker, phase, line, inlet or unit, where the PDU reports one;
   * absent: not reported. Load against it is for a later consumer; nothing reads it yet.
   */
  readonly ratedCurrent?: number;
  /**
   * The PDU reports this entity's trip state itself (its alarm is a breaker's status with a tripped
   * value: a Raritan overcurrent protector's trip sensor, an Eaton group's breaker status); absent:
   * it does not, and a trip is inferred from its current (src/pdu/trips.ts).
   */
  readonly reportsTrip?: true;
  /** Set by the configured overrides (src/pdu/overrides.ts); absent: not set. */
  readonly renamed?: true;
  readonly hidden?: true;
}

/**
 * Where a driver sends writes for a device: the driver's own data (Geist: a OneView member's proxy
 * ports), opaque to the core, which only hands it back with an outlet target. null: the polled unit.
 */
export type DeviceRoute = Readonly<Record<string, unknown>>;

/**
 * The fields of {@link Device} that say what its driver can do for its outlets, each a boolean. A
 * command row (src/control/commands.ts) names the one it needs; the surfaces that offer commands
 * (Home Assistant discovery, the console) offer it only where the device's field is true.
 */
export type DeviceCapability = "canResetOutletEnergy" | "canSwitchOutlets";

/** Who makes the PDU, as Home Assistant discovery names it; supplied by the driver. */
export interface Vendor {
  /** `manufacturer` of the Home Assistant devices (`Vertiv`); a unit's OEM is added in parentheses. */
  readonly manufacturer: string;
  /** `model` of the Home Assistant device of an outlet group (`OneView group`). */
  readonly groupModel: string;
}

export interface Device {
  /** The PDU's device id (serial-like, e.g. `A0AE260C851900C3`); the `{deviceId}` of every write path. */
  readonly id: string;
  readonly name: string;
  readonly label: string;
  /** label, else name, else id. */
  readonly displayName: string;
  readonly type: string;
  /** Device state as reported (`normal` when healthy). */
  readonly state: string;
  readonly alarm: Alarm;
  readonly order: number | null;
  /**
   * False only when the device reports `conf.outletControlEnabled: false`: the PDU itself refuses
   * switching, so control requests are refused before any write. Missing counts as enabled.
   */
  readonly outletControlEnabled: boolean;
  /**
   * Whether the driver can reset one outlet's accumulated energy statistics on this device (the
   * `resetStats` command): Geist units can, an SNMP family only where its MIB has a per-outlet
   * reset (docs/snmp.md). False: the console offers no reset button and Home Assistant discovery
   * announces no reset button for the device's outlets, and the driver refuses the command before
   * anything is sent.
   *
   * Per device, not per instance: a device is where the model keeps what writes its outlets take
   * (as {@link outletControlEnabled}), and it is what every surface already holds when it lists an
   * outlet's commands, so none of them needs the instance's snapshot beside the outlet. Every device
   * of an instance has the same value today (one driver, one SNMP profile); the model does not rely
   * on it.
   */
  readonly canResetOutletEnergy: boolean;
  /**
   * Whether the device's outlets can be switched (on, off, reboot): Geist units can; an SNMP unit
   * only where its family has outlet control and the unit answers its control table (a metered or
   * non-switched model does not). False: no switch or reboot is offered anywhere, and such a
   * command is refused (409) before anything is sent, with the device's `lacks` reason.
   */
  readonly canSwitchOutlets: boolean;
  /**
   * Why the device lacks a capability, in words naming its model (the 409's detail), for the
   * capabilities that are false; absent: a generic reason.
   */
  readonly lacks?: Readonly<Partial<Record<DeviceCapability, string>>>;
  /** `lifetimeEnergy` parsed from its string, or null when absent or not an integer. */
  readonly lifetimeEnergy: number | null;
  /** Identity of the unit this device lives in (the member in OneView mode). */
  readonly system: PduSystem;
  /** null: reached directly on the configured host/port; else the driver's routing data. */
  readonly route: DeviceRoute | null;
  readonly outlets: readonly Outlet[];
  readonly entities: readonly Entity[];
}

export interface PduSystem {
  /** `sys.label`, else `sys.name`. */
  readonly label: string;
  readonly oem: string;
  readonly model: string;
  readonly modelNumber: string;
  readonly serialNumber: string;
  /** Hardware version (`sys.version`). */
  readonly hardwareVersion: string;
  /** Firmware version (`sys.appVersion`). */
  readonly firmwareVersion: string;
  readonly apiVersion: string;
  readonly macAddress: string;
  readonly ipAddress: string;
}

export interface OutletRef {
  readonly deviceId: string;
  readonly index: number;
}

/** One rollup measurement of a OneView group (all four statistics optional, numeric or null). */
export interface GroupMeasurement {
  /**
   * Key unique within the group, used in topics and discovery ids: the measurement type for the
   * group's `entity.outlet` rollups (`realPower`), and `pduTotal` + Type for the `entity.pduTotal`
   * rollups of the built-in `total` group (`pduTotalRealPower`).
   */
  readonly key: string;
  readonly type: string;
  readonly units: string;
  readonly sum: number | null;
  readonly avg: number | null;
  readonly min: number | null;
  readonly max: number | null;
}

export interface Group {
  /** Group key (`total`, `unassigned`, `"2"`, ...). */
  readonly key: string;
  readonly name: string;
  readonly label: string;
  /** label, else name, else key. */
  readonly displayName: string;
  readonly state: string;
  readonly order: number | null;
  /** Member outlets found by scanning every host's groupMap (case-insensitive key match), sorted. */
  readonly members: readonly OutletRef[];
  readonly measurements: readonly GroupMeasurement[];
  /** Set by the configured overrides (src/pdu/overrides.ts); absent: not set. */
  readonly renamed?: true;
  readonly hidden?: true;
  readonly protected?: true;
}

/**
 * An optional part of the PDU's answer that was malformed and therefore left out of the snapshot
 * (see docs/reliability.md "Essential and optional parts"). Everything else was kept.
 */
export interface ParseWarning {
  /** JSON path of the dropped part, e.g. `$.group.2.entity.outlet.0.measurement`. */
  readonly path: string;
  /** What was wrong and what was dropped. */
  readonly problem: string;
}

export interface Snapshot {
  readonly instanceId: string;
  /** When the poll that produced this snapshot completed (epoch ms). */
  readonly timestamp: number;
  readonly mode: "single" | "oneview";
  /** The driver's manufacturer and group model (discovery). */
  readonly vendor: Vendor;
  /** Identity of the polled unit (the master in OneView mode). */
  readonly system: PduSystem;
  /** Every device of every host, sorted by id. */
  readonly devices: readonly Device[];
  /** OneView groups sorted by order then key; empty in single mode. */
  readonly groups: readonly Group[];
  /**
   * Optional parts of the answer that were malformed and dropped, in the order met, at most
   * MAX_PARSE_WARNINGS (the last one then says how many more there were). Absent or empty: none.
   */
  readonly warnings?: readonly ParseWarning[];
}

/**
 * The same state as `previous`, polled again at `timestamp`: what a driver returns when the PDU's
 * answer is byte for byte the previous one. Every part is `previous`'s own object, which is how
 * {@link sameContent} (and so the store and the publisher) know that nothing changed.
 */
export function restamp(previous: Snapshot, timestamp: number): Snapshot {
  return Object.freeze({ ...previous, timestamp });
}

/**
 * True when both snapshots are made of the same part objects (snapshots are frozen, so they hold the
 * same data): one is the other restamped ({@link restamp}), or the same object. Snapshots with equal
 * data but built separately are not the same content here; that only costs the work it would save.
 */
export function sameContent(a: Snapshot, b: Snapshot): boolean {
  return (
    a.devices === b.devices &&
    a.groups === b.groups &&
    a.system === b.system &&
    a.warnings === b.warnings &&
    a.mode === b.mode &&
    a.vendor === b.vendor &&
    a.instanceId === b.instanceId
  );
}

/** Numeric-aware comparison of outlet indexes and other integer-like keys ("9" < "10"). */
export function compareKeys(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  const aNum = a !== "" && Number.isInteger(na);
  const bNum = b !== "" && Number.isInteger(nb);
  if (aNum && bNum) return na - nb;
  if (aNum !== bNum) return aNum ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function findDevice(snapshot: Snapshot, deviceId: string): Device | undefined {
  return snapshot.devices.find((d) => d.id === deviceId);
}

export function findOutlet(snapshot: Snapshot, deviceId: string, index: number): Outlet | undefined {
  return findDevice(snapshot, deviceId)?.outlets.find((o) => o.index === index);
}

export function findGroup(snapshot: Snapshot, groupKey: string): Group | undefined {
  const lower = groupKey.toLowerCase();
  return snapshot.groups.find((g) => g.key.toLowerCase() === lower);
}

/*
 * Load against ratings and alarms: derived from a snapshot once (src/pdu/load.ts) and kept beside
 * it by the store, so every surface reads the same states (docs/alarms.md).
 */

/** How close a current is to its rating, or what the PDU reports about a thing. */
export type LoadState = "normal" | "warning" | "critical";

/** The severity of an active alarm. */
export type AlarmSeverity = Exclude<LoadState, "normal">;

/**
 * What raised an alarm: `load` (a current against its rating, or a load state the PDU reports such
 * as `nearOverload`), `tripped` (a breaker or fuse the PDU reports open), `breaker-trip-suspected`
 * (a breaker or bank the PDU reports nothing about that fell to 0 A under outlets that are on:
 * src/pdu/trips.ts) or `pdu` (any other alarm the PDU reports raised: a sensor threshold, a device
 * alarm); and of the alarms about several PDUs
 * (src/assets/alarms.ts, listed under `$assets` and `$feeds` in the place of an instance):
 * `redundancy` (an asset lost a cord) and `feed-loss` (a feed's loss would overload an entity).
 */
export type AlarmSource = "load" | "tripped" | "breaker-trip-suspected" | "pdu" | "redundancy" | "feed-loss";

/** Where a load is measured: an outlet or an entity (phase, bank, breaker, inlet, ...). */
export type LoadTarget =
  { readonly kind: "outlet"; readonly index: number } | { readonly kind: "entity"; readonly key: string };

/** Where an alarm is: an outlet, an entity, or the device itself. */
export type AlarmTarget = LoadTarget | { readonly kind: "device" };

/** One current and its rating. */
export interface LoadPoint {
  readonly deviceId: string;
  readonly target: LoadTarget;
  /** The thing's display name (overrides applied). */
  readonly name: string;
  /** Amps, or null when the PDU reports none that is a number. */
  readonly current: number | null;
  /** Rated amps, or null when neither the PDU nor the configuration gives one. */
  readonly rating: number | null;
  /** Where the rating comes from. */
  readonly ratingFrom: "pdu" | "config" | null;
  /** current / rating, or null without both. */
  readonly ratio: number | null;
  /** The load state of the ratio alone (with hysteresis); `normal` without a ratio. */
  readonly loadState: LoadState;
  /** The worst of {@link loadState} and what the PDU reports about the thing. */
  readonly state: LoadState;
  /** Hidden by the overrides (no MQTT topics, no Home Assistant entities). */
  readonly hidden?: true;
  /**
   * Whether what the point shows differs from the same thing's point in the assessment its report
   * compares with ({@link LoadReport.comparedWith}): its name, whole percent, state, whether it has
   * a rating or is hidden; true when the thing had no point there. Its current alone may differ.
   */
  readonly changed: boolean;
}

/** One active alarm: a thing and what raised it. */
export interface ActiveAlarm {
  /** Unique within the instance and stable while the alarm lasts: `<deviceId>/<where>/<source>`. */
  readonly id: string;
  readonly deviceId: string;
  readonly target: AlarmTarget;
  /** The thing's display name. */
  readonly name: string;
  readonly source: AlarmSource;
  readonly severity: AlarmSeverity;
  /** The load in whole percent of the rating, where there is one. */
  readonly percent: number | null;
  /** The state the PDU reports (`nearOverload`, `tripped`, `alarm`, ...), or null when only the rating raised it. */
  readonly reported: string | null;
  /** When it was raised (epoch ms). */
  readonly since: number;
  readonly hidden?: true;
}

/** An alarm raised, changed (its severity or reported state) or cleared by a snapshot. */
export interface AlarmChange {
  readonly change: "raised" | "changed" | "cleared";
  /** The alarm as it is now; a cleared one as it was. */
  readonly alarm: ActiveAlarm;
  /** When (epoch ms): the snapshot's time. */
  readonly at: number;
}

/** Every load and active alarm of one snapshot. */
export interface LoadReport {
  /** Rated currents, and the currents of phases, banks, breakers, inlets, lines, cords and totals. */
  readonly points: readonly LoadPoint[];
  /**
   * Active alarms, worst first: the same array as the assessment before's when every alarm in it is
   * the same (id, name, severity, percent, reported state, start, hidden), so a reader that keeps
   * the array it last wrote knows the list is unchanged.
   */
  readonly alarms: readonly ActiveAlarm[];
  /** The assessment's number, unique in the process (0: no assessment). */
  readonly serial: number;
  /**
   * The serial of the assessment before, of the same tracker, which the points' `changed` flags
   * and {@link samePoints} compare with (0: none).
   */
  readonly comparedWith: number;
  /** The points are the same things as that assessment's, in the same order, each hidden as it was. */
  readonly samePoints: boolean;
}
