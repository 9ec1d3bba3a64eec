/** Small statistics helpers for the benchmarks. */

/** Percentile `p` (0..100) of `values` by linear interpolation between closest ranks; null when empty. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (rank - lo);
}

export function median(values: readonly number[]): number | null {
  return percentile(values, 50);
}

export function mean(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Standard error of the mean (sample standard deviation over the square root of n); null below two values. */
export function standardError(values: readonly number[]): number | null {
  const m = mean(values);
  if (m === null || values.length < 2) return null;
  let squares = 0;
  for (const v of values) squares += (v - m) ** 2;
  return Math.sqrt(squares / (values.length - 1) / values.length);
}

/** `a / b`, or null when either is missing or b is 0. */
export function ratio(a: number | null, b: number | null): number | null {
  if (a === null || b === null || b === 0) return null;
  return a / b;
}

export function round(v: number | null, digits = 2): number | null {
  if (v === null || !Number.isFinite(v)) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/**
 * Lateness of periodic requests seen by a server, per client, from their arrival times alone.
 *
 * Each poll k of one PDU is expected at `phase + k·interval`. The phase is unknown from the
 * outside, so it is taken from the *earliest* poll of the window (the one with the smallest
 * deviation from the interval grid): lateness is how much later than that best poll each poll came,
 * which is exactly the scheduler jitter the target is about (a constant network delay, the same for
 * every poll, is not lateness). Also returns the spacing deviation |Δt − interval| of consecutive
 * polls and how many intervals passed without a poll (skipped turns).
 *
 * `counted`, when given, keeps only the polls it accepts in `lateness` and `polls` (e.g. those that
 * arrived while the API was hammered); the phase is still taken from every poll of the window.
 */
export function pollLateness(
  timesPerClient: readonly (readonly number[])[],
  intervalMs: number,
  counted: (time: number) => boolean = () => true,
): { lateness: number[]; spacing: number[]; polls: number; skipped: number } {
  const lateness: number[] = [];
  const spacing: number[] = [];
  let polls = 0;
  let skipped = 0;
  for (const times of timesPerClient) {
    if (times.length === 0) continue;
    const sorted = [...times].sort((a, b) => a - b);
    const t0 = sorted[0]!;
    const deviations = sorted.map((t) => t - t0 - Math.round((t - t0) / intervalMs) * intervalMs);
    const best = Math.min(...deviations);
    sorted.forEach((t, i) => {
      if (!counted(t)) return;
      polls++;
      lateness.push(deviations[i]! - best);
    });
    for (let i = 1; i < sorted.length; i++) {
      const gap = sorted[i]! - sorted[i - 1]!;
      const turns = Math.round(gap / intervalMs);
      if (turns > 1) skipped += turns - 1;
      spacing.push(Math.abs(gap - Math.max(1, turns) * intervalMs));
    }
  }
  return { lateness, spacing, polls, skipped };
}

/**
 * The sawtooth of a memory series sampled during a window: how far it rises above its floor,
 * `(max − floor) / floor` with the floor the 5th percentile (the low points right after the
 * collections, robust to one odd sample). A growing trend counts too. Null when empty or 0.
 */
export function sawtooth(samples: readonly number[]): number | null {
  const floor = percentile(samples, 5);
  if (floor === null || floor <= 0) return null;
  return (Math.max(...samples) - floor) / floor;
}
