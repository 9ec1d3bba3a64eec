/**
 * Hostile answers (docs/simulator.md, "Hostile answers"): fault modes that change what a unit's
 * `GET /api` and the master's `GET /oneview` answer, the way a broken or malicious PDU could, while
 * everything else (writes, sub-tree reads, the request log) works as usual. They combine: a list
 * given to `setFault` applies each of them to the same answer.
 *
 * - `huge-id:<n>`: the unit's first device answers under an id of exactly n characters (its own id
 *   padded with `X`; the simulator's state keeps the real id, so writes to that id are not found).
 * - `huge-label:<n>`: the label of the unit's first device, and of that device's first outlet, is n
 *   characters (`L` repeated).
 * - `outlets:<n>`: every device answers exactly n outlets, 0 to n-1, each a copy of one of its real
 *   outlets (outlet k shows outlet k mod count) named `Outlet <k+1>`.
 * - `new-id`: every answer gives every device a new id (its id, `-` and the number of the answer),
 *   as a PDU whose devices are renamed on every poll would.
 *
 * Built per answer from the tree the simulator would have sent; nothing here is kept between
 * answers except the answer counter of `new-id`.
 */

import type { WireDevice, WireOutlet } from "./tree.js";

/** The answer modes, as `setFault` takes them. */
export type HostileMode = `huge-id:${number}` | `huge-label:${number}` | `outlets:${number}` | "new-id";

/** What the modes of one listener change, combined. */
export interface AnswerShape {
  readonly hugeId: number | null;
  readonly hugeLabel: number | null;
  readonly outlets: number | null;
  readonly newId: boolean;
}

/** The largest n a `huge-id`, `huge-label` or `outlets` mode takes (a body far past any client's limit). */
export const MAX_HOSTILE_SIZE = 64 * 1024 * 1024;

const SIZED = /^(huge-id|huge-label|outlets):(0|[1-9][0-9]*)$/;

/** True for the answer modes (the other faults change the transport, not the answer). */
export function isHostileMode(fault: string): fault is HostileMode {
  return fault === "new-id" || SIZED.test(fault);
}

/** Combines answer modes; a bad size or a mode given twice is a RangeError. */
export function answerShape(modes: readonly HostileMode[]): AnswerShape | null {
  if (modes.length === 0) return null;
  let hugeId: number | null = null;
  let hugeLabel: number | null = null;
  let outlets: number | null = null;
  let newId = false;
  const seen = new Set<string>();
  for (const mode of modes) {
    const name = mode.split(":", 1)[0]!;
    if (seen.has(name)) throw new RangeError(`simulator: fault ${name} given twice`);
    seen.add(name);
    if (mode === "new-id") {
      newId = true;
      continue;
    }
    const match = SIZED.exec(mode);
    const n = match === null ? NaN : Number(match[2]);
    const min = name === "outlets" ? 0 : 1;
    if (!Number.isSafeInteger(n) || n < min || n > MAX_HOSTILE_SIZE)
      throw new RangeError(`simulator: bad fault ${mode} (${name} takes ${min} to ${MAX_HOSTILE_SIZE})`);
    if (name === "huge-id") hugeId = n;
    else if (name === "huge-label") hugeLabel = n;
    else outlets = n;
  }
  return Object.freeze({ hugeId, hugeLabel, outlets, newId });
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The answer's `data` with the modes applied: `/api` (`rootOf: "api"`) changes its `dev` map,
 * `/oneview` the `cache.dev` map of every host. `answer` numbers the answer (for `new-id`).
 */
export function reshapeAnswer(
  data: unknown,
  root: "api" | "oneview",
  shape: AnswerShape,
  answer: number,
): unknown {
  if (!isObj(data)) return data;
  if (root === "api") return { ...data, dev: reshapeDevices(data.dev, shape, answer) };
  if (!isObj(data.host)) return data;
  const host: Obj = {};
  for (const [key, entry] of Object.entries(data.host)) {
    host[key] =
      isObj(entry) && isObj(entry.cache)
        ? { ...entry, cache: { ...entry.cache, dev: reshapeDevices(entry.cache.dev, shape, answer) } }
        : entry;
  }
  return { ...data, host };
}

function reshapeDevices(dev: unknown, shape: AnswerShape, answer: number): unknown {
  if (!isObj(dev)) return dev;
  const out: Obj = {};
  let first = true;
  for (const [id, value] of Object.entries(dev)) {
    let device = value as WireDevice;
    let answeredId = shape.newId ? `${id}-${answer}` : id;
    if (shape.outlets !== null) device = { ...device, outlet: manyOutlets(device.outlet, shape.outlets) };
    if (first && shape.hugeId !== null) answeredId = sized(answeredId, shape.hugeId, "X");
    if (first && shape.hugeLabel !== null) {
      const label = "L".repeat(shape.hugeLabel);
      const outlets = { ...device.outlet };
      const key = Object.keys(outlets)[0];
      if (key !== undefined) outlets[key] = { ...outlets[key]!, label };
      device = { ...device, label, outlet: outlets };
    }
    first = false;
    out[answeredId] = device;
  }
  return out;
}

/** `text` made exactly `n` characters long: cut, or padded with `pad`. */
function sized(text: string, n: number, pad: string): string {
  return text.length >= n ? text.slice(0, n) : text + pad.repeat(n - text.length);
}

/** Exactly `n` outlets, keyed 0 to n-1, each a copy of one of `outlets` (cycled). */
function manyOutlets(outlets: Record<string, WireOutlet>, n: number): Record<string, WireOutlet> {
  const real = Object.values(outlets);
  const out: Record<string, WireOutlet> = {};
  if (real.length === 0) return out;
  for (let k = 0; k < n; k++) out[String(k)] = { ...real[k % real.length]!, name: `Outlet ${k + 1}` };
  return out;
}
