/**
 * How the page writes values: readable names of measurement types, one precision per unit (so a
 * current is always "2.00 A", never "2 A" beside "2.03 A"), ages, and the health of an instance.
 */
import type { WireInstanceStatus } from "../wire.js";

const NAMES: Readonly<Record<string, string>> = {
  realpower: "Power",
  apparentpower: "Apparent power",
  powerfactor: "Power factor",
  energy: "Energy",
  energylifetime: "Lifetime energy",
  current: "Current",
  voltage: "Voltage",
  currentcrestfactor: "Crest factor",
  balance: "Phase balance",
  accumulatedco2: "CO₂ emitted",
  instantaneousco2: "CO₂ rate",
  temperature: "Temperature",
  humidity: "Humidity",
  frequency: "Frequency",
};

/** `apparentPower` → "Apparent power"; an unknown type is split at its capitals. */
export function measurementName(type: string): string {
  const known = NAMES[type.toLowerCase()];
  if (known !== undefined) return known;
  const words = type.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Decimals by unit (the PDU's units, else the type's usual one). */
const DECIMALS: Readonly<Record<string, number>> = {
  W: 0,
  VA: 0,
  kW: 2,
  A: 2,
  mA: 0,
  V: 1,
  kWh: 2,
  Wh: 0,
  "%": 0,
  Hz: 1,
  "°C": 1,
  "°F": 1,
};
const UNIT_OF: Readonly<Record<string, string>> = {
  realpower: "W",
  apparentpower: "VA",
  energy: "kWh",
  current: "A",
  voltage: "V",
  powerfactor: "%",
};

export function unitOf(type: string, units: string): string {
  return units !== "" ? units : (UNIT_OF[type.toLowerCase()] ?? "");
}

/** A number with exactly `digits` decimals and thousands separators, or an en dash. */
export function fixed(value: number | null | undefined, digits: number): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  return value.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A measurement with its unit, at its unit's precision: "2.03 A", "546 VA", "812.34 kWh". */
export function measured(value: number | null | undefined, type: string, units: string): string {
  const unit = unitOf(type, units);
  const text = fixed(value, DECIMALS[unit] ?? 2);
  return text === "–" || unit === "" ? text : `${text} ${unit}`;
}

export const watts = (w: number | null | undefined): string => measured(w, "realPower", "W");
export const amps = (a: number | null | undefined): string => measured(a, "current", "A");

/** "12 s", "3 min", "2 h", "4 d". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** "12 s ago", or "never". */
export function ago(fromIso: string | null, now: number): string {
  if (fromIso === null) return "never";
  return `${duration((now - Date.parse(fromIso)) / 1000)} ago`;
}

/**
 * What an instance needs from someone, worst first (the fleet's order of problems). Among several
 * replicas, `unpolled`: no replica polls it now (its holder died, until another takes it over);
 * `elsewhere`: another replica polls it and its state cannot be had here.
 */
export type Health =
  "offline" | "unpolled" | "critical" | "warning" | "stale" | "pending" | "elsewhere" | "ok";

export const HEALTH_ORDER: readonly Health[] = [
  "offline",
  "unpolled",
  "critical",
  "warning",
  "stale",
  "pending",
  "elsewhere",
  "ok",
];

export const HEALTH_TEXT: Readonly<Record<Health, string>> = {
  offline: "Offline",
  unpolled: "Not polled",
  critical: "Critical",
  warning: "Warning",
  stale: "Stale",
  pending: "Not polled yet",
  elsewhere: "Held elsewhere",
  ok: "OK",
};

/** Among several replicas, the state of an instance held elsewhere is not here: why, and who holds it. */
export function elsewhere(s: WireInstanceStatus): string | null {
  const replica = s.replica;
  if (replica?.state !== "none") return null;
  const note = replica.note ?? "its state is not here";
  return replica.holder === null ? note : `held by replica ${replica.holder}: ${note}`;
}

/** Among several replicas, who polls it: "polled by replica r2" (this replica's own: "polled here"). */
export function polledBy(s: WireInstanceStatus): string {
  const replica = s.replica;
  if (replica === undefined || replica.holder === null) return "";
  return replica.here ? `polled here (replica ${replica.holder})` : `polled by replica ${replica.holder}`;
}

/** Data older than this many poll intervals (and at least 30 s) is stale. */
const STALE_POLLS = 3;

/** Seconds since the last good poll, or null when there was none. */
export function dataAge(s: WireInstanceStatus, now: number): number | null {
  return s.lastSuccessUtc === null ? null : Math.max(0, (now - Date.parse(s.lastSuccessUtc)) / 1000);
}

/** Whether the data shown of an instance is stale: its polls fail, or none succeeded for a while. */
export function isStale(s: WireInstanceStatus, now: number): boolean {
  if (s.status === "failing") return true;
  const age = dataAge(s, now);
  return age !== null && age > Math.max(30, STALE_POLLS * s.pollInterval);
}

export function healthOf(s: WireInstanceStatus, now: number): Health {
  if (s.replica?.state === "none") return s.replica.holder === null ? "unpolled" : "elsewhere";
  if (s.status === "failing") return "offline";
  if (s.alarms.critical > 0) return "critical";
  if (s.alarms.warning > 0) return "warning";
  if (isStale(s, now)) return "stale";
  if (s.status === "pending") return "pending";
  return "ok";
}

/** One line about an instance's health: the error, the alarms, how old its data is. */
export function healthDetail(s: WireInstanceStatus, now: number): string {
  const away = elsewhere(s);
  if (away !== null) return away;
  const own = ownDetail(s, now);
  const by = s.replica?.here === false ? polledBy(s) : "";
  return [own, by].filter(Boolean).join("; ");
}

/** {@link healthDetail} of the instance's own state. */
function ownDetail(s: WireInstanceStatus, now: number): string {
  const age = dataAge(s, now);
  const alarms = [
    s.alarms.critical > 0 ? `${s.alarms.critical} critical` : "",
    s.alarms.warning > 0 ? `${s.alarms.warning} warning` : "",
  ]
    .filter(Boolean)
    .join(", ");
  if (s.status === "failing") {
    const data = age === null ? "never polled" : `data ${duration(age)} old`;
    return `${data}: ${s.lastError ?? "polls fail"}`;
  }
  // A refused login (checked at start) matters once the instance is polled: commands will fail.
  const login = s.loginError === null ? "" : `Control will fail: ${s.loginError}`;
  if (s.status === "pending") return login || "waiting for the first poll";
  if (isStale(s, now) && age !== null)
    return [`no poll for ${duration(age)}`, alarms, login].filter(Boolean).join("; ");
  return [alarms, login].filter(Boolean).join("; ");
}
