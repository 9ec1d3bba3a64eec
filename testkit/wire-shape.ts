/**
 * The structure of a Geist JSON answer, without its values: every key path (map keys such as device
 * ids, outlet indexes and measurement keys collapsed to `*`, array elements to `[]`) with the set of
 * JSON types seen there. Two answers have the same shape when they have the same paths with the
 * same types; values and counts are free. Used to keep the simulator in the real units' shape.
 */

export type JsonType = "object" | "array" | "string" | "number" | "boolean" | "null";

/** Path pattern → JSON types seen at it. */
export type Shape = Map<string, Set<JsonType>>;

/** Objects under these keys are maps keyed by data (ids, indexes, names), not records of fields. */
const MAP_KEYS = new Set([
  "dev",
  "outlet",
  "measurement",
  "entity",
  "layout",
  "host",
  "group",
  "address",
  "pduTotal",
  "auth",
]);

function typeOf(v: unknown): JsonType {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  const t = typeof v;
  if (t === "string" || t === "number" || t === "boolean") return t;
  return "object";
}

/** Whether the children of the object at `pattern` are map entries. */
function isMap(pattern: readonly string[]): boolean {
  const last = pattern.at(-1);
  if (last === undefined || !MAP_KEYS.has(last)) return false;
  // A OneView group's `entity` holds the fixed kinds `outlet` and `pduTotal`.
  return !(last === "entity" && pattern.at(-3) === "group");
}

function walk(v: unknown, pattern: string[], shape: Shape): void {
  const key = pattern.join(".");
  let types = shape.get(key);
  if (types === undefined) shape.set(key, (types = new Set()));
  types.add(typeOf(v));
  if (Array.isArray(v)) {
    for (const item of v) walk(item, [...pattern, "[]"], shape);
  } else if (typeof v === "object" && v !== null) {
    const map = isMap(pattern);
    for (const [k, child] of Object.entries(v)) walk(child, [...pattern, map ? "*" : k], shape);
  }
}

/** The shape of a JSON value (`$` is the root). */
export function shapeOf(value: unknown): Shape {
  const shape: Shape = new Map();
  walk(value, [], shape);
  return shape;
}

/** Readable differences between two shapes (empty when equal); `ignore` skips paths of `expected` only. */
export function compareShapes(
  actual: Shape,
  expected: Shape,
  ignore: (path: string) => boolean = () => false,
): string[] {
  const out: string[] = [];
  const fmt = (p: string) => `$${p === "" ? "" : `.${p}`}`;
  for (const [path, types] of expected) {
    const got = actual.get(path);
    if (got === undefined) {
      if (!ignore(path)) out.push(`missing ${fmt(path)} (${[...types].join("|")})`);
      continue;
    }
    const want = [...types].sort().join("|");
    const have = [...got].sort().join("|");
    if (want !== have) out.push(`${fmt(path)} is ${have}, expected ${want}`);
  }
  for (const [path, types] of actual)
    if (!expected.has(path)) out.push(`unexpected ${fmt(path)} (${[...types].join("|")})`);
  return out;
}
