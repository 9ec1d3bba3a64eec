/**
 * The SNMP trap receiver's counters (docs/events.md, "SNMP traps"), mirrored from its counts at
 * scrape time: `pdu_trap_dropped_total{reason}`, `pdu_trap_events_total{instance,kind}` and
 * `pdu_trap_polls_total{instance}` (the extra polls traps asked for). The labels are the receiver's
 * reasons and kinds and configured instance ids, so the series are bounded by the configuration.
 */
import { Counter, type Registry } from "prom-client";

/** What the metrics read of the receiver (src/traps/part.ts hands it over; counters since start). */
export interface TrapCounts {
  readonly dropped: ReadonlyMap<string, number>;
  readonly events: ReadonlyMap<string, ReadonlyMap<string, number>>;
  readonly polls: ReadonlyMap<string, number>;
}

/** A counter that follows `read`'s totals per label set. */
function mirrored<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: readonly L[],
  read: () => Iterable<[Record<L, string>, number]>,
): void {
  const seen = new Map<string, number>();
  new Counter<L>({
    name,
    help,
    labelNames,
    registers,
    collect() {
      for (const [labels, total] of read()) {
        const key = JSON.stringify(labels);
        const before = seen.get(key) ?? 0;
        if (total > before) this.inc(labels as never, total - before);
        seen.set(key, Math.max(before, total));
      }
    },
  });
}

export function registerTrapMetrics(registers: Registry[], counts: () => TrapCounts): void {
  mirrored(registers, "pdu_trap_dropped_total", "SNMP traps dropped, by reason", ["reason"], function* () {
    for (const [reason, n] of counts().dropped) yield [{ reason }, n];
  });
  mirrored(
    registers,
    "pdu_trap_events_total",
    "SNMP traps accepted and made events, by instance and kind",
    ["instance", "kind"],
    function* () {
      for (const [instance, kinds] of counts().events) {
        for (const [kind, n] of kinds) yield [{ instance, kind }, n];
      }
    },
  );
  mirrored(
    registers,
    "pdu_trap_polls_total",
    "Extra polls traps asked for, by instance",
    ["instance"],
    function* () {
      for (const [instance, n] of counts().polls) yield [{ instance }, n];
    },
  );
}
