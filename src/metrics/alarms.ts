/**
 * The load and alarm families of `/metrics` (docs/metrics.md, "Loads and alarms"), from each up
 * instance's load report (src/pdu/load.ts) at scrape time, after the reading families:
 *
 * - `pdu_outlet_load_ratio{instance,device,outlet}` and `pdu_entity_load_ratio{instance,device,entity}`:
 *   current ÷ rating of every rated outlet and entity (1 is the rating);
 * - `pdu_alarm_active{instance,device,source,severity}` plus `entity` or `outlet` where the alarm is
 *   on one: 1 for every active alarm (an alarm that clears leaves the exposition).
 *
 * Ids that are not safe names (src/names.ts) are left out, as everywhere in the exposition.
 */
import type { LoadReport } from "../pdu/model.js";
import { nameProblem } from "../names.js";
import { escapeLabel } from "./readings.js";

/** What the families are written from: one up instance. */
export interface LoadSource {
  readonly instanceId: string;
  readonly load: LoadReport;
}

interface LoadFamily {
  readonly name: string;
  readonly help: string;
  write(source: LoadSource, instance: string, out: string): string;
}

const safe = (id: string): boolean => nameProblem(id) === null;

const FAMILIES: readonly LoadFamily[] = [
  {
    name: "pdu_outlet_load_ratio",
    help: "Outlet current divided by its rating (1 is the rating); rated outlets only",
    write(source, instance, out) {
      for (const p of source.load.points) {
        if (p.target.kind !== "outlet" || p.ratio === null || !safe(p.deviceId)) continue;
        out += `pdu_outlet_load_ratio{instance="${instance}",device="${escapeLabel(p.deviceId)}",outlet="${p.target.index}"} ${p.ratio}\n`;
      }
      return out;
    },
  },
  {
    name: "pdu_entity_load_ratio",
    help: "Current of a phase, bank, breaker, inlet or other entity divided by its rating (1 is the rating); rated ones only",
    write(source, instance, out) {
      for (const p of source.load.points) {
        if (p.target.kind !== "entity" || p.ratio === null || !safe(p.deviceId) || !safe(p.target.key))
          continue;
        out += `pdu_entity_load_ratio{instance="${instance}",device="${escapeLabel(p.deviceId)}",entity="${escapeLabel(p.target.key)}"} ${p.ratio}\n`;
      }
      return out;
    },
  },
  {
    name: "pdu_alarm_active",
    help: "1 for every active alarm: source load (current against its rating, or a load state the PDU reports), tripped (a breaker or fuse the PDU reports open), breaker-trip-suspected (a breaker or bank that fell to 0 A under outlets that are on, where the PDU reports no trip), pdu (another alarm the PDU reports), redundancy (instance $assets, device the asset) or feed-loss (instance $feeds, with feed and pdu); severity warning or critical",
    write(source, instance, out) {
      for (const a of source.load.alarms) {
        if (!safe(a.deviceId)) continue;
        let where = "";
        if (a.target.kind === "entity") {
          if (!safe(a.target.key)) continue;
          where = `,entity="${escapeLabel(a.target.key)}"`;
        } else if (a.target.kind === "outlet") where = `,outlet="${a.target.index}"`;
        // A feed-loss alarm (under `$feeds`): the feed and the entity's instance (src/assets/alarms.ts).
        if (
          "feed" in a &&
          typeof a.feed === "string" &&
          "instanceId" in a &&
          typeof a.instanceId === "string"
        )
          where += `,feed="${escapeLabel(a.feed)}",pdu="${escapeLabel(a.instanceId)}"`;
        out += `pdu_alarm_active{instance="${instance}",device="${escapeLabel(a.deviceId)}"${where},source="${a.source}",severity="${a.severity}"} 1\n`;
      }
      return out;
    },
  },
];

/** The family names (for documentation and tests). */
export const LOAD_METRICS: readonly string[] = FAMILIES.map((f) => f.name);

/** The load and alarm families of these instances, each family one group (both formats: gauges). */
export function* loadChunks(sources: readonly LoadSource[]): Generator<string> {
  for (const f of FAMILIES) {
    let out = `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} gauge\n`;
    for (const source of sources) {
      out = f.write(source, escapeLabel(source.instanceId), out);
      if (out.length >= 64 * 1024) {
        yield out;
        out = "";
      }
    }
    yield out;
  }
}
