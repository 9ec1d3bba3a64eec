/**
 * One lifetime counter: the rule that turns the readings of a PDU's resettable energy counter into
 * a counter that never decreases (docs/energy.md, "The rules").
 *
 * - A rise no larger than the thing could draw since the reading it rises from is counted.
 * - A larger rise is not counted (a garbage reading); the reading is kept as a candidate. The same
 *   reading again changes nothing; a later reading that rises plausibly from the candidate (and not
 *   from the base) makes the candidate the new base: a spike, however long it lasts, is not
 *   counted, and the base's energy is counted in full once the readings are back; a lasting jump
 *   costs what was drawn while it was a candidate.
 * - A drop is a wrap when the measurement wraps (a 32-bit counter) and the rise through the wrap
 *   is plausible; otherwise a reset (resetStats, a reset at the PDU, a firmware upgrade): the
 *   reading is counted as the energy since the reset when the thing could have drawn it since the
 *   previous reading, and becomes the new base either way.
 * - A new unit at the same place (a replaced device, src/energy/book.ts) is read as a reset.
 *
 * Plain mutable data and functions, no classes: a fleet has one of these per outlet and entity,
 * and each poll walks them.
 */

/** The state of one counter: what a checkpoint keeps (`lifetimeWh`, `baseWh`, `from`) and more. */
export interface Counter {
  /** The lifetime counter (Wh); never decreases. */
  lifetimeWh: number;
  /** The PDU's reading the next rise is measured from (Wh); NaN before the first reading. */
  baseWh: number;
  /** Since when a rise from the base may have accumulated (epoch ms): the poll before the base was first seen. */
  from: number;
  /** The time of the last reading (epoch ms). */
  seenAt: number;
  /** A reading that rose implausibly from the base (Wh), or NaN. */
  candidateWh: number;
  /** Since when a rise from the candidate may have accumulated (epoch ms). */
  candidateFrom: number;
}

/** What a reading did to its counter (for the log and tests). */
export type Outcome =
  | "first"
  | "same"
  | "rise"
  | "wrap"
  | "reset"
  | "reset-uncounted"
  | "rejected"
  | "rejected-again"
  | "rebased";

/** Margin on the most a thing can draw: a PDU's own sampling time may differ from the poll's. */
export const DRAW_MARGIN = 1.1;
/** Added to every bound (Wh): the rounding of a counter read in whole watt-hours. */
export const ROUNDING_WH = 1;

/**
 * How far back a rise from a counter's first reading may have accumulated (ms): a counter that
 * counts in steps (tenths of a kWh) may have been close to its next step when it was first read.
 */
export const FIRST_WINDOW_MS = 15 * 60_000;

/** A counter that has seen nothing yet, starting at `lifetimeWh`. */
export function newCounter(lifetimeWh = 0): Counter {
  return { lifetimeWh, baseWh: NaN, from: 0, seenAt: 0, candidateWh: NaN, candidateFrom: 0 };
}

/** The most energy (Wh) a thing drawing at most `maxWatts` can add between `from` and `to` (epoch ms). */
export function plausibleWh(maxWatts: number, from: number, to: number): number {
  const hours = Math.max(0, to - from) / 3_600_000;
  return maxWatts * hours * DRAW_MARGIN + ROUNDING_WH;
}

/**
 * Applies one reading (`readingWh` at `at`, epoch ms) of a counter that wraps at `wrapsAtWh` (0:
 * does not wrap) on a thing that draws at most `maxWatts`.
 */
export function apply(
  c: Counter,
  readingWh: number,
  at: number,
  maxWatts: number,
  wrapsAtWh: number,
): Outcome {
  const previous = c.seenAt;
  if (Number.isNaN(c.baseWh)) {
    c.baseWh = readingWh;
    c.from = at - FIRST_WINDOW_MS;
    c.seenAt = at;
    return "first";
  }
  c.seenAt = Math.max(previous, at);
  if (readingWh === c.baseWh) {
    c.candidateWh = NaN;
    return "same";
  }
  if (readingWh > c.baseWh) return rise(c, readingWh, at, previous, maxWatts);
  const through = wrapsAtWh > 0 ? readingWh + wrapsAtWh - c.baseWh : -1;
  if (through >= 0 && through <= plausibleWh(maxWatts, c.from, at)) {
    countFrom(c, through, readingWh, previous);
    return "wrap";
  }
  return restart(c, readingWh, at, previous, maxWatts);
}

/**
 * A rise from the base: counted when plausible. An implausible one is a candidate: the same
 * reading again keeps it (noted once), a plausible rise on top of it makes it the new base.
 */
function rise(c: Counter, readingWh: number, at: number, previous: number, maxWatts: number): Outcome {
  const delta = readingWh - c.baseWh;
  if (delta <= plausibleWh(maxWatts, c.from, at)) {
    countFrom(c, delta, readingWh, previous);
    return "rise";
  }
  if (readingWh === c.candidateWh) return "rejected-again";
  const fromCandidate = readingWh - c.candidateWh;
  if (fromCandidate > 0 && fromCandidate <= plausibleWh(maxWatts, c.candidateFrom, at)) {
    countFrom(c, fromCandidate, readingWh, previous);
    return "rebased";
  }
  c.candidateWh = readingWh;
  c.candidateFrom = previous;
  return "rejected";
}

/**
 * A reading below the base that is no wrap: the counter restarted (reset, firmware, a replaced
 * unit). The reading is the energy since the restart, which happened after the previous reading.
 */
export function restart(
  c: Counter,
  readingWh: number,
  at: number,
  previous: number,
  maxWatts: number,
): Outcome {
  const counted = readingWh <= plausibleWh(maxWatts, previous, at);
  countFrom(c, counted ? readingWh : 0, readingWh, previous);
  return counted ? "reset" : "reset-uncounted";
}

function countFrom(c: Counter, wh: number, readingWh: number, previous: number): void {
  if (wh > 0) c.lifetimeWh += wh;
  c.baseWh = readingWh;
  c.from = previous;
  c.candidateWh = NaN;
}
