/**
 * CPU time and memory of one process and its descendants from /proc (Linux): utime + stime of
 * /proc/<pid>/stat and VmRSS / VmHWM of /proc/<pid>/status, summed over the process tree (a CLI that
 * re-spawns itself with other node flags is measured whole). A {@link ProcMonitor} samples
 * periodically so a window can report the peak RSS and its sawtooth, not only the last value.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

let clockTicks: number | null = null;

/** Clock ticks per second of /proc/<pid>/stat (`getconf CLK_TCK`, almost always 100). */
export function clkTck(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface ProcSample {
  /** performance-clock ms when sampled. */
  readonly at: number;
  /** User + system CPU seconds used so far. */
  readonly cpuSeconds: number;
  readonly rssBytes: number;
  /** Peak RSS so far (VmHWM). */
  readonly hwmBytes: number;
}

/** `pid` and its descendants (children files of /proc/<pid>/task/<tid>/), parents first. */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0 && out.length < 1000) {
    const p = queue.shift()!;
    out.push(p);
    try {
      for (const tid of readdirSync(`/proc/${p}/task`)) {
        const children = readFileSync(`/proc/${p}/task/${tid}/children`, "utf8").trim();
        if (children !== "") queue.push(...children.split(" ").map(Number));
      }
    } catch {
      // gone, or no children files in this kernel: count the process alone
    }
  }
  return out;
}

/**
 * One sample of the process tree under `pid` (CPU, RSS and VmHWM summed over the tree; the sum of
 * peaks may exceed the peak of the sum), or null when `pid` is gone.
 */
export function sampleProc(pid: number): ProcSample | null {
  const root = sampleOne(pid);
  if (root === null) return null;
  let { cpuSeconds, rssBytes, hwmBytes } = root;
  for (const child of processTree(pid).slice(1)) {
    const s = sampleOne(child);
    if (s === null) continue;
    cpuSeconds += s.cpuSeconds;
    rssBytes += s.rssBytes;
    hwmBytes += s.hwmBytes;
  }
  return { at: root.at, cpuSeconds, rssBytes, hwmBytes };
}

function sampleOne(pid: number): ProcSample | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    const ticks = Number(fields[11]) + Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return {
      at: performance.now(),
      cpuSeconds: ticks / clkTck(),
      rssBytes: kib(status, "VmRSS") * 1024,
      hwmBytes: kib(status, "VmHWM") * 1024,
    };
  } catch {
    return null;
  }
}

function kib(status: string, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, "m").exec(status);
  return m ? Number(m[1]) : 0;
}

export interface WindowUsage {
  /** CPU seconds used within the window. */
  readonly cpuSeconds: number;
  readonly seconds: number;
  /** Peak and last RSS sampled within the window. */
  readonly rssPeakBytes: number;
  readonly rssLastBytes: number;
  /** Every RSS sample of the window, in bytes. */
  readonly rssSamples: readonly number[];
}

/** Samples a process every `everyMs` while running; `begin()`/`end()` delimit a measured window. */
export class ProcMonitor {
  readonly pid: number;
  #timer: NodeJS.Timeout | null = null;
  #start: ProcSample | null = null;
  #peak = 0;
  #last = 0;
  #samples: number[] = [];

  constructor(pid: number, everyMs = 1000) {
    this.pid = pid;
    this.#timer = setInterval(() => this.#sample(), everyMs);
    this.#timer.unref();
  }

  #sample(): ProcSample | null {
    const s = sampleProc(this.pid);
    if (s !== null && this.#start !== null) {
      this.#peak = Math.max(this.#peak, s.rssBytes);
      this.#last = s.rssBytes;
      this.#samples.push(s.rssBytes);
    }
    return s;
  }

  begin(): void {
    this.#start = sampleProc(this.pid);
    if (this.#start === null) throw new Error(`process ${this.pid} is gone`);
    this.#peak = this.#start.rssBytes;
    this.#last = this.#start.rssBytes;
    this.#samples = [this.#start.rssBytes];
  }

  end(): WindowUsage {
    const start = this.#start;
    const end = this.#sample();
    if (start === null || end === null) throw new Error(`process ${this.pid} is gone`);
    this.#start = null;
    return {
      cpuSeconds: end.cpuSeconds - start.cpuSeconds,
      seconds: (end.at - start.at) / 1000,
      rssPeakBytes: this.#peak,
      rssLastBytes: this.#last,
      rssSamples: this.#samples,
    };
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
