/**
 * Does a cost grow linearly with the fleet? From measurements at increasing sizes, the marginal
 * cost per unit between neighbouring sizes (the slope of each segment) is compared with the mean of
 * those slopes: a segment that departs from it by more than `tolerance` (a fraction) is flagged.
 * With a straight line every segment has the same slope, whatever the fixed cost at zero.
 */

export interface Point {
  readonly x: number;
  readonly y: number;
}

export interface Segment {
  readonly from: number;
  readonly to: number;
  /** (y(to) − y(from)) / (to − from). */
  readonly slope: number;
  /** slope / mean slope − 1; null when the mean slope is 0. */
  readonly departure: number | null;
  readonly linear: boolean;
}

export interface Linearity {
  readonly segments: readonly Segment[];
  readonly meanSlope: number | null;
  /** True when no segment departs more than the tolerance (and there are at least two points). */
  readonly linear: boolean;
}

export function linearity(points: readonly Point[], tolerance = 0.25): Linearity {
  const sorted = [...points].sort((a, b) => a.x - b.x);
  const raw: { from: number; to: number; slope: number }[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    if (b.x === a.x) continue;
    raw.push({ from: a.x, to: b.x, slope: (b.y - a.y) / (b.x - a.x) });
  }
  if (raw.length === 0) return { segments: [], meanSlope: null, linear: false };
  const meanSlope = raw.reduce((sum, s) => sum + s.slope, 0) / raw.length;
  const segments = raw.map((s) => {
    const departure = meanSlope === 0 ? null : s.slope / meanSlope - 1;
    const linear = departure === null ? s.slope === 0 : Math.abs(departure) <= tolerance;
    return { ...s, departure, linear };
  });
  return { segments, meanSlope, linear: segments.every((s) => s.linear) };
}

/** One line per segment, e.g. `250→500: 0.21 MB/PDU (+4 % from the mean)`, flagged ones marked. */
export function describeLinearity(l: Linearity, unit: string): string[] {
  return l.segments.map((s) => {
    const dep =
      s.departure === null
        ? ""
        : ` (${s.departure >= 0 ? "+" : ""}${(s.departure * 100).toFixed(0)} % from the mean)`;
    return `${round(s.from)}→${round(s.to)}: ${s.slope.toPrecision(3)} ${unit}${dep}${s.linear ? "" : "  NOT LINEAR"}`;
  });
}

/** A size as a whole number (4000 PDUs every 30 s count as 1333.33… at 10 s). */
const round = (x: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(0));
