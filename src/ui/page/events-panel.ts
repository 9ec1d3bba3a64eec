/**
 * The "Recent events" panel: alarms raised, changed and cleared, control actions from every
 * surface, each saying who asked (the signed-in console user by name, a machine with the API key,
 * or an MQTT command), and what SNMP traps from the PDUs told (its kind, the outlet and the name
 * the PDU gives it, the state), and among several replicas the replica that carried a control out
 * or received a trap. The service sends the latest on connect; the panel keeps what it shows
 * bounded, newest first (an event of another replica arrives a little after it happened: it takes
 * its place by time). Everything a PDU sent is shown as text.
 */
import type {
  AlarmEventData,
  ControlEventData,
  TrapEventData,
  WireActiveAlarm,
  WireRecentEvent,
} from "../wire.js";
import { h, replace } from "./dom.js";
import { commandOf, href, state } from "./state.js";

/** Entries kept (and shown). */
const MAX_ENTRIES = 12;

function who(event: ControlEventData): string {
  if (event.source === "console") return event.user === null ? "console" : `${event.user.name} (console)`;
  return event.source === "rest" ? "API key" : "MQTT";
}

/**
 * "Breaker 1 (breaker0)", "outlet 4 “web-01”", "device Rack PDU"; in an instance of several devices
 * (a OneView cluster) the device id follows, since every member has a breaker0.
 */
export function alarmPlace(alarm: WireActiveAlarm): string {
  const t = alarm.target;
  if (t.kind === "device") return `device ${alarm.name}`;
  const place =
    t.kind === "outlet"
      ? `outlet ${t.index + 1} “${alarm.name}”`
      : alarm.name === t.key
        ? t.key
        : `${alarm.name} (${t.key})`;
  const devices = state.statuses.get(alarm.instanceId)?.devices ?? 1;
  return devices > 1 ? `${place} of ${alarm.deviceId}` : place;
}

/** "load 97 %", "tripped", "nearOverload". */
export function alarmCause(alarm: WireActiveAlarm): string {
  if (alarm.reported !== null)
    return alarm.percent === null ? alarm.reported : `${alarm.reported}, ${alarm.percent} %`;
  if (alarm.source === "breaker-trip-suspected") return "trip suspected: 0 A under outlets that are on";
  return alarm.percent === null ? alarm.source : `load ${alarm.percent} %`;
}

const time = (iso: string): string => new Date(iso).toLocaleTimeString();

function alarmEntry(e: AlarmEventData): HTMLElement {
  const a = e.alarm;
  const verb = e.change === "cleared" ? "Cleared" : e.change === "raised" ? "Raised" : "Now";
  return h(
    "li",
    { class: `ev ev-alarm ${e.change === "cleared" ? "cleared" : a.severity}` },
    h("time", { datetime: e.atUtc }, time(e.atUtc)),
    h(
      "span",
      { class: `badge ${e.change === "cleared" ? "ok" : a.severity}` },
      e.change === "cleared" ? "cleared" : a.severity,
    ),
    h(
      "span",
      { class: "what" },
      `${verb}: ${alarmPlace(a)}, ${alarmCause(a)} on `,
      h("a", { href: href.pdu(a.instanceId) }, a.instanceId),
    ),
  );
}

function controlEntry(e: ControlEventData): HTMLElement {
  const target =
    e.target.kind === "outlet"
      ? `outlet ${e.target.index + 1} of ${e.target.deviceId}`
      : `group ${e.target.groupKey}`;
  const verb = commandOf(e.action)?.verb.toLowerCase() ?? e.action;
  return h(
    "li",
    { class: `ev ev-control ${e.ok ? "ok" : "bad"}` },
    h("time", { datetime: e.atUtc }, time(e.atUtc)),
    h("span", { class: `badge ${e.ok ? "neutral" : "critical"}` }, e.ok ? "control" : "refused"),
    h(
      "span",
      { class: "what" },
      h("span", { class: "who" }, who(e)),
      `: ${verb} ${target} on `,
      h("a", { href: href.pdu(e.instanceId) }, e.instanceId),
      e.ok ? "" : ` (${e.status} ${e.detail ?? ""})`,
      e.by === undefined ? null : h("span", { class: "sub by" }, ` · by replica ${e.by}`),
    ),
  );
}

/** What each kind of trap says happened, and its badge. */
const TRAP_KINDS: Readonly<Record<TrapEventData["trap"]["kind"], { what: string; badge: string }>> = {
  "outlet-switched": { what: "outlet switched", badge: "neutral" },
  "breaker-tripped": { what: "breaker", badge: "critical" },
  "load-state": { what: "load", badge: "warning" },
  sensor: { what: "sensor", badge: "neutral" },
  "unit-restarted": { what: "unit restarted", badge: "neutral" },
  other: { what: "trap", badge: "neutral" },
};

/** "Trap: outlet switched, outlet 4 “web-04” off (rPDUOutletOff) on rack-a". */
function trapEntry(e: TrapEventData): HTMLElement {
  const t = e.trap;
  const kind = TRAP_KINDS[t.kind] ?? TRAP_KINDS.other;
  const place =
    t.outlet === null
      ? t.label === null
        ? ""
        : ` “${t.label}”`
      : `, outlet ${t.outlet}${t.label === null ? "" : ` “${t.label}”`}`;
  const badge = t.kind === "breaker-tripped" && t.state !== "tripped" ? "neutral" : kind.badge;
  return h(
    "li",
    { class: `ev ev-trap trap-${t.kind}`, "data-instance": e.instanceId },
    h("time", { datetime: e.atUtc }, time(e.atUtc)),
    h("span", { class: `badge ${badge}` }, "trap"),
    h(
      "span",
      { class: "what" },
      `Trap: ${kind.what}${place}${t.state === null ? "" : ` ${t.state}`} `,
      h("span", { class: "sub" }, `(${t.name})`),
      " on ",
      h("a", { href: href.pdu(e.instanceId) }, e.instanceId),
      e.by === undefined ? null : h("span", { class: "sub by" }, ` · by replica ${e.by}`),
    ),
  );
}

function entry(e: WireRecentEvent): HTMLElement {
  if (e.kind === "alarm") return alarmEntry(e);
  return e.kind === "control" ? controlEntry(e) : trapEntry(e);
}

export class EventsPanel {
  readonly element: HTMLElement;
  readonly #list = h("ol", { class: "log" });
  readonly #empty = h("p", { class: "note" }, "Nothing yet: alarms, control actions and traps show here.");
  #entries: WireRecentEvent[] = [];

  constructor() {
    this.element = h(
      "section",
      { class: "panel events", "aria-labelledby": "events-title" },
      h("h2", { id: "events-title" }, "Recent events"),
      this.#empty,
      h("div", { "aria-live": "polite" }, this.#list),
    );
  }

  /** The latest events, newest first (on connect). */
  reset(events: readonly WireRecentEvent[]): void {
    this.#entries = events.slice(0, MAX_ENTRIES);
    this.#render();
  }

  add(event: WireRecentEvent): void {
    const index = this.#entries.findIndex((e) => e.atUtc <= event.atUtc);
    if (index === -1) this.#entries.push(event);
    else this.#entries.splice(index, 0, event);
    if (this.#entries.length > MAX_ENTRIES) this.#entries.length = MAX_ENTRIES;
    this.#render();
  }

  #render(): void {
    this.#empty.hidden = this.#entries.length > 0;
    replace(this.#list, ...this.#entries.map(entry));
  }
}
