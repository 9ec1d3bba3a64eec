/**
 * What the console's event stream says about loads and alarms (docs/console.md), from each
 * snapshot's load report (src/pdu/load.ts): a thing's load, an instance's alarm counts and most
 * loaded phase, the alarm events, the recent events kept for a page that connects, and the
 * page's bootstrap data (the command rows its buttons are built from).
 */
import type { Config } from "../config/schema.js";
import { commandsFor } from "../control/commands.js";
import { alarmJson, loadJson } from "../pdu/load.js";
import type { AlarmChange, LoadPoint, LoadReport } from "../pdu/model.js";
import type {
  AlarmEventData,
  ConsoleBootstrap,
  WireActiveAlarm,
  WireCommand,
  WireInstanceStatus,
  WireLoad,
  WireRecentEvent,
} from "./wire.js";

export function wireLoad(point: LoadPoint): WireLoad {
  return { current: point.current, rating: point.rating, ...loadJson(point) };
}

/** The load of each outlet and entity of a report, by device: how the snapshot event finds them. */
export function loadsByThing(report: LoadReport): {
  outlet(deviceId: string, index: number): WireLoad | null;
  entity(deviceId: string, key: string): WireLoad | null;
} {
  const outlets = new Map<string, WireLoad>();
  const entities = new Map<string, WireLoad>();
  for (const p of report.points) {
    if (p.target.kind === "outlet") outlets.set(`${p.deviceId}\u0000${p.target.index}`, wireLoad(p));
    else entities.set(`${p.deviceId}\u0000${p.target.key}`, wireLoad(p));
  }
  return {
    outlet: (deviceId, index) => outlets.get(`${deviceId}\u0000${index}`) ?? null,
    entity: (deviceId, key) => entities.get(`${deviceId}\u0000${key}`) ?? null,
  };
}

/** The active alarms the console shows (hidden things left out). */
export function shownAlarms(instanceId: string, report: LoadReport): WireActiveAlarm[] {
  return report.alarms.filter((a) => a.hidden !== true).map((a) => alarmJson(instanceId, a));
}

export function alarmCounts(report: LoadReport): WireInstanceStatus["alarms"] {
  let critical = 0;
  let warning = 0;
  for (const a of report.alarms) {
    if (a.hidden === true) continue;
    if (a.severity === "critical") critical++;
    else warning++;
  }
  return { critical, warning };
}

/**
 * The most loaded of a report's phases, banks, breakers and other load entities (inlets, lines,
 * cords, totals), or null: the highest share of its rating, a rated one before any unrated, and
 * among unrated ones the highest current. A breaker at 94 % of its rating is what an operator must
 * see, whatever its phase carries.
 */
export function peakLoad(report: LoadReport): WireInstanceStatus["peak"] {
  let best: LoadPoint | null = null;
  for (const p of report.points) {
    if (p.hidden === true || p.target.kind !== "entity" || p.current === null) continue;
    if (best === null || rankOf(p) > rankOf(best)) best = p;
  }
  return best === null ? null : { name: best.name, ...wireLoad(best) };
}

/** Rated loads by their share of the rating, above every unrated one (by current). */
const rankOf = (p: LoadPoint): number => (p.ratio !== null ? 1e9 + p.ratio : (p.current ?? 0));

export function alarmEvent(instanceId: string, change: AlarmChange): AlarmEventData {
  return {
    change: change.change,
    atUtc: new Date(change.at).toISOString(),
    alarm: alarmJson(instanceId, change.alarm),
  };
}

/** Events kept for a page that connects. */
export const RECENT_EVENTS = 50;

/** The latest alarm changes and control outcomes, newest first, at most {@link RECENT_EVENTS}. */
export class RecentEvents {
  readonly #events: WireRecentEvent[] = [];

  add(event: WireRecentEvent): void {
    this.#events.unshift(event);
    if (this.#events.length > RECENT_EVENTS) this.#events.length = RECENT_EVENTS;
  }

  /**
   * An event made elsewhere (another replica's, which arrives later than it happened): placed by
   * its time among the others, and not kept when it is older than all {@link RECENT_EVENTS}.
   */
  insert(event: WireRecentEvent): void {
    const at = event.atUtc;
    const index = this.#events.findIndex((e) => e.atUtc <= at);
    if (index === -1) this.#events.push(event);
    else this.#events.splice(index, 0, event);
    if (this.#events.length > RECENT_EVENTS) this.#events.length = RECENT_EVENTS;
  }

  list(): readonly WireRecentEvent[] {
    return this.#events;
  }
}

const wireCommands = (kind: "outlet" | "group"): WireCommand[] =>
  commandsFor(kind).flatMap((row) => {
    const form = kind === "outlet" ? row.outlet : row.group;
    if (form === null) return [];
    return [{ name: row.name, ...form.console, latches: row.latches, needs: row.needs }];
  });

/** What the page needs besides the event stream: the command rows, the alarm lines, whether sign-in is on. */
export function consoleBootstrap(config: Config): ConsoleBootstrap {
  return {
    commands: { outlet: wireCommands("outlet"), group: wireCommands("group") },
    alarms: { warnPercent: config.Alarms.WarnPercent, criticalPercent: config.Alarms.CriticalPercent },
    signIn: config.Api.Oidc.Enabled,
  };
}
