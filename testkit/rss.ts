/**
 * The resident memory of a child process, read from `/proc/<pid>/status` (Linux), and a sampler
 * that keeps the largest value seen: the tests of hostile PDUs bound how much a process grows.
 */
import { readFileSync } from "node:fs";

/** `VmRSS` of the process in bytes, or null when it has exited (or /proc is not there). */
export function rssBytes(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

/** Samples a process's RSS every `everyMs` until stopped; `peak` is the largest sample. */
export class RssSampler {
  peak = 0;
  samples = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(
    readonly pid: number,
    everyMs = 50,
  ) {
    const sample = () => {
      const rss = rssBytes(pid);
      if (rss === null) return;
      this.samples++;
      if (rss > this.peak) this.peak = rss;
    };
    sample();
    this.#timer = setInterval(sample, everyMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

export const MB = 1024 * 1024;
