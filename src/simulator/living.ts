/**
 * Deterministic randomness and smooth "living" waveforms for the simulator.
 *
 * Nothing here runs on a timer: a waveform is a pure function of time, and its integral has a
 * closed form, so energy can be computed on read from elapsed time.
 */

/** Mixes integers into one well-spread unsigned 32-bit hash (same inputs, same hash). */
export function hash32(...parts: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const part of parts) {
    h ^= part >>> 0;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A seeded generator of numbers in [0, 1) (xorshift32). */
export function random(seed: number): () => number {
  let x = seed >>> 0 || 0x6d2b79f5;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x1_0000_0000;
  };
}

/** `min + (max - min) * r()`. */
export function between(r: () => number, min: number, max: number): number {
  return min + (max - min) * r();
}

interface Term {
  readonly amplitude: number;
  readonly omega: number;
  readonly phase: number;
}

/**
 * A positive quantity wandering around `base`:
 * `value(t) = base * (1 + Σ amplitude·sin(omega·t + phase))`, t in milliseconds.
 * The amplitudes add up to well under 1, so the value never reaches 0.
 */
export class Wave {
  private readonly terms: readonly Term[];

  constructor(
    readonly base: number,
    r: () => number,
    amplitudes: readonly number[] = [0.08, 0.04],
    /** A still wave stays at `base` (the terms are still drawn, so `r` advances as usual). */
    still = false,
  ) {
    const terms = amplitudes.map((amplitude, k) => ({
      amplitude,
      // a slow drift (1–3 min) and a faster ripple (7–20 s)
      omega: (2 * Math.PI) / (k === 0 ? between(r, 60_000, 180_000) : between(r, 7_000, 20_000)),
      phase: between(r, 0, 2 * Math.PI),
    }));
    this.terms = still ? [] : terms;
  }

  at(t: number): number {
    let f = 1;
    for (const { amplitude, omega, phase } of this.terms) f += amplitude * Math.sin(omega * t + phase);
    return this.base * f;
  }

  /** An antiderivative of `at` (value·ms): the integral over [a, b] is `integral(b) - integral(a)`. */
  integral(t: number): number {
    let f = t;
    for (const { amplitude, omega, phase } of this.terms)
      f -= (amplitude / omega) * Math.cos(omega * t + phase);
    return this.base * f;
  }
}
