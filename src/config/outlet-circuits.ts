/**
 * `Pdus.<id>.OutletCircuits` read as the configuration writes it: each key an outlet index or an
 * inclusive range of 0-based indexes (`"0-11"`, `"12"`), for every device of the instance or, after
 * `<deviceId>/`, for one device; each value the key of the entity those outlets draw through. The
 * rules the loader applies (exit 2 naming the key) and the ranges src/assets/circuits.ts applies to
 * snapshots.
 */
import { nameProblem } from "../names.js";

/** One `OutletCircuits` row: outlets `from`..`to` (0-based, inclusive) draw through `entity`. */
export interface CircuitRange {
  /** The device it is for; null: every device of the instance. */
  readonly device: string | null;
  readonly from: number;
  readonly to: number;
  readonly entity: string;
}

/** Highest outlet index a range may name (a PDU answer has at most 256 outlets per device). */
const MAX_INDEX = 4095;
const RANGE = /^(0|[1-9][0-9]{0,3})(?:-(0|[1-9][0-9]{0,3}))?$/;

export interface CircuitProblem {
  /** The `OutletCircuits` key it is about. */
  readonly key: string;
  readonly problem: string;
}

/** The ranges of one instance's `OutletCircuits`, in key order, and what is wrong with its keys. */
export function parseCircuits(circuits: Readonly<Record<string, string>>): {
  readonly ranges: readonly CircuitRange[];
  readonly problems: readonly CircuitProblem[];
} {
  const ranges: CircuitRange[] = [];
  const problems: CircuitProblem[] = [];
  for (const [key, entity] of Object.entries(circuits)) {
    const slash = key.lastIndexOf("/");
    const device = slash < 0 ? null : key.slice(0, slash);
    const match = RANGE.exec(slash < 0 ? key : key.slice(slash + 1));
    const deviceProblem = device === null ? null : nameProblem(device);
    const entityProblem = nameProblem(entity);
    if (deviceProblem !== null) problems.push({ key, problem: `names a device id that ${deviceProblem}` });
    else if (entityProblem !== null)
      problems.push({ key, problem: `names an entity key that ${entityProblem}` });
    else if (match === null)
      problems.push({
        key,
        problem: "must be an outlet index or range (`0-11`), optionally after `<deviceId>/`",
      });
    else {
      const from = Number(match[1]);
      const to = match[2] === undefined ? from : Number(match[2]);
      if (to < from || to > MAX_INDEX)
        problems.push({ key, problem: `must run upwards within 0-${MAX_INDEX} (got ${from}-${to})` });
      else ranges.push({ device, from, to, entity });
    }
  }
  for (const overlap of overlaps(ranges)) problems.push(overlap);
  return { ranges, problems };
}

/** How a range is written as a key (`0-11`, `<deviceId>/3`). */
export const rangeKey = (r: CircuitRange): string =>
  `${r.device === null ? "" : `${r.device}/`}${r.from === r.to ? r.from : `${r.from}-${r.to}`}`;

/** Rows of the same scope (every device, or one device) that name one outlet twice. */
function overlaps(ranges: readonly CircuitRange[]): CircuitProblem[] {
  const problems: CircuitProblem[] = [];
  const sorted = [...ranges].sort((a, b) =>
    a.device === b.device ? a.from - b.from : (a.device ?? "") < (b.device ?? "") ? -1 : 1,
  );
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    if (a.device === b.device && b.from <= a.to)
      problems.push({
        key: rangeKey(b),
        problem: `overlaps ${rangeKey(a)}: an outlet draws through one entity`,
      });
  }
  return problems;
}
