/**
 * Turning schema problems into plain sentences: unknown keys (with a spelling suggestion) and
 * typebox's errors (one per key), each naming the key in dotted form.
 */
import type { TLocalizedValidationError } from "typebox/error";
import { ADVERTISE_URL_PATTERN, MemberNamePattern } from "./schema.js";

/** The parts of a JSON schema node the messages look at (typebox schemas are plain JSON schema). */
export interface SchemaNode {
  readonly type?: string;
  readonly const?: unknown;
  readonly enum?: readonly unknown[];
  readonly anyOf?: readonly SchemaNode[];
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly patternProperties?: Readonly<Record<string, SchemaNode>>;
  readonly required?: readonly string[];
  readonly default?: unknown;
  readonly description?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  /** Our own annotation: a running service takes a change of this key without a restart. */
  readonly appliesLive?: boolean;
  /** Our own annotation on a map: what its keys are (the reference writes `<keyName>`); default `id`. */
  readonly keyName?: string;
  /** Our own annotation on an optional key without a default: what leaving it out means. */
  readonly whenAbsent?: string;
}

export const asSchemaNode = (schema: object): SchemaNode => schema;

/** A problem at a key path, before it gets a file and line. */
export interface Problem {
  readonly path: readonly string[];
  readonly problem: string;
  /** For an unknown key: the known key it is probably a misspelling of. */
  readonly suggestion?: string;
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

/** Keys whose values are never repeated in messages. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  "Password",
  "ApiKey",
  "ClientSecret",
  "Community",
  "WriteCommunity",
  "AuthKey",
  "PrivKey",
]);

/**
 * Every key not in the schema, walking mappings in `keysOf` order. Under a map with free keys
 * (`patternProperties`, i.e. `Pdus`) the keys are not checked here; their values are. A key below
 * an unknown key is not looked at (the unknown one says it all).
 */
export function findUnknownKeys(
  schema: SchemaNode,
  value: unknown,
  keysOf: (path: readonly string[]) => string[],
  path: readonly string[] = [],
): Problem[] {
  if (!isPlainObject(value)) return [];
  const ordered = orderedKeys(value, keysOf(path));
  const found: Problem[] = [];
  if (schema.properties !== undefined) {
    const known = Object.keys(schema.properties);
    for (const key of ordered) {
      // Own properties only: `constructor`, `toString`, `__proto__` are unknown keys, not Object's.
      const child = Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
      if (child === undefined) {
        const suggestion = suggest(key, known);
        found.push({
          path: [...path, key],
          problem: unknownKeyProblem(key, known),
          ...(suggestion === undefined ? {} : { suggestion }),
        });
      } else found.push(...findUnknownKeys(child, value[key], keysOf, [...path, key]));
    }
    return found;
  }
  const itemSchema = Object.values(schema.patternProperties ?? {})[0];
  if (itemSchema === undefined) return found;
  for (const key of ordered) found.push(...findUnknownKeys(itemSchema, value[key], keysOf, [...path, key]));
  return found;
}

/** `keysOf` order first (file order), then any key only the data has (e.g. from a merge key). */
export function orderedKeys(value: Record<string, unknown>, fileOrder: readonly string[]): string[] {
  const keys = fileOrder.filter((key) => Object.hasOwn(value, key));
  for (const key of Object.keys(value)) if (!keys.includes(key)) keys.push(key);
  return keys;
}

function unknownKeyProblem(key: string, known: readonly string[]): string {
  const suggestion = suggest(key, known);
  return suggestion === undefined
    ? `unknown key (expected one of ${known.join(", ")})`
    : `unknown key, did you mean \`${suggestion}\`?`;
}

/** The known key closest to `key`: same letters ignoring case, `_` and `-`, else within a small edit distance. */
export function suggest(key: string, known: readonly string[]): string | undefined {
  const fold = (s: string) => s.toLowerCase().replace(/[-_ ]/g, "");
  const exact = known.find((k) => fold(k) === fold(key));
  if (exact !== undefined) return exact;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(fold(key), fold(candidate));
    const allowed = Math.min(2, Math.floor(candidate.length / 3));
    if (distance <= allowed && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Infinity;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i]!;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, at(i - 2, j - 2) + 1);
      row[j] = d;
    }
  }
  return at(a.length, b.length);
}

/**
 * Every error worth showing, at most one per key, a key's own error before its children's (a
 * section of the wrong type says it all; its keys are not listed too). Errors of single `anyOf`
 * branches are skipped (the `anyOf` error itself says it better), as are additional-property
 * errors (unknown keys are reported before).
 */
export function describeErrors(
  schema: SchemaNode,
  value: unknown,
  errors: readonly TLocalizedValidationError[],
): Problem[] {
  const problems: Problem[] = [];
  const seen: string[] = [];
  for (const error of errors) {
    if (/\/anyOf\/\d+/.test(error.schemaPath) || error.keyword === "additionalProperties") continue;
    if (error.keyword === "boolean") continue;
    const problem = describeError(schema, value, error);
    const key = problem.path.join("\u0000");
    // One per key, and none below a key already reported.
    if (seen.some((s) => key === s || key.startsWith(`${s}\u0000`))) continue;
    seen.push(key);
    problems.push(problem);
  }
  return problems;
}

function describeError(schema: SchemaNode, value: unknown, error: TLocalizedValidationError): Problem {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  const got = valueAt(value, path);
  const node = schemaAt(schema, error.schemaPath);
  const shown = SECRET_KEYS.has(path.at(-1) ?? "")
    ? ""
    : ` (got ${node !== undefined && holdsSecrets(node) ? showKind(got) : showValue(got)})`;
  switch (error.keyword) {
    case "required": {
      const missing = error.params.requiredProperties.find((k) => !isPlainObject(got) || !(k in got));
      return { path: [...path, missing ?? error.params.requiredProperties[0] ?? ""], problem: "is required" };
    }
    case "type":
      return { path, problem: `must be ${typeName(error.params.type)}${shown}` };
    case "anyOf":
      return { path, problem: `must be ${describeAnyOf(schemaAt(schema, error.schemaPath))}${shown}` };
    case "enum":
      return {
        path,
        problem: `must be one of ${error.params.allowedValues.map(scalarText).join(", ")}${shown}`,
      };
    case "const":
      return { path, problem: `must be ${JSON.stringify(error.params.allowedValue)}${shown}` };
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return { path, problem: `must be ${error.params.comparison} ${String(error.params.limit)}${shown}` };
    case "minLength":
      return {
        path,
        problem:
          error.params.limit === 1
            ? "must not be empty"
            : `must be at least ${error.params.limit} characters`,
      };
    case "maxLength":
      return { path, problem: `must be at most ${error.params.limit} characters` };
    case "pattern": {
      const pattern = String(error.params.pattern);
      return { path, problem: `${PATTERN_WORDS[pattern] ?? `must match the pattern ${pattern}`}${shown}` };
    }
    case "minProperties":
      return {
        path,
        problem: `must have at least ${error.params.limit} ${error.params.limit === 1 ? "entry" : "entries"}`,
      };
    default:
      return { path, problem: `${error.message}${shown}` };
  }
}

/** Patterns of the schema in plain words. */
const PATTERN_WORDS: Readonly<Record<string, string>> = {
  "^[^#+]+$": "must not contain the MQTT wildcards # or +",
};

function typeName(type: string | readonly string[]): string {
  const names: Record<string, string> = {
    integer: "an integer",
    number: "a number",
    string: "a string",
    boolean: "true or false",
    object: "a mapping",
    array: "a list",
    null: "null",
  };
  const types = typeof type === "string" ? [type] : type;
  return types.map((t) => names[t] ?? t).join(" or ");
}

function describeAnyOf(node: SchemaNode | undefined): string {
  const branches = node?.anyOf ?? [];
  if (branches.length > 0 && branches.every((b) => b.const !== undefined)) {
    return `one of ${branches.map((b) => scalarText(b.const)).join(", ")}`;
  }
  return branches
    .map((b) => {
      if (b.const !== undefined) return JSON.stringify(b.const);
      // A string branch with a pattern says what the pattern expects, not only "a string".
      if (b.type === "string" && typeof b.pattern === "string") {
        return EXPECTED[b.pattern] ?? `a string matching ${b.pattern}`;
      }
      return typeName(b.type ?? "?");
    })
    .join(" or ");
}

/** What a string with one of these patterns is, in plain words (for "must be … or null"). */
const EXPECTED: Readonly<Record<string, string>> = {
  [MemberNamePattern]:
    "a member name (lower-case letters, digits, - and ., at most 63, starting and ending with a letter or digit: replica-1, pdu-bridge-7d9f-abcde)",
  [ADVERTISE_URL_PATTERN]:
    "an http:// or https:// origin: scheme, host and port, no path, query or user (http://10.0.3.7:8082)",
};

/** The schema node at a JSON pointer such as `#/properties/Mqtt/properties/Connection`. */
function schemaAt(schema: SchemaNode, pointer: string): SchemaNode | undefined {
  let node: unknown = schema;
  for (const raw of pointer.replace(/^#\/?/, "").split("/")) {
    if (raw === "") continue;
    const segment = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    node =
      isPlainObject(node) || Array.isArray(node) ? (node as Record<string, unknown>)[segment] : undefined;
  }
  return isPlainObject(node) ? asSchemaNode(node) : undefined;
}

export function valueAt(value: unknown, path: readonly string[]): unknown {
  let node = value;
  for (const key of path) node = isPlainObject(node) ? node[key] : undefined;
  return node;
}

/**
 * Whether a secret key may sit under this schema node (Credentials, Api, a PDU, the whole file).
 * Text found where such a node was expected is not echoed: it may be the node's children folded
 * into one scalar (`Credentials: >` over an indented `Password: …`), the secret included.
 */
function holdsSecrets(node: SchemaNode): boolean {
  const children = [
    ...Object.entries(node.properties ?? {}),
    ...Object.entries(node.patternProperties ?? {}),
  ];
  return (
    children.some(([key, child]) => SECRET_KEYS.has(key) || holdsSecrets(child)) ||
    (node.anyOf ?? []).some(holdsSecrets)
  );
}

/** Like {@link showValue}, but text shows only as "text" (see {@link holdsSecrets}). */
export function showKind(value: unknown): string {
  return typeof value === "string" ? "text" : showValue(value);
}

/** A value as it appears in a message: short, and never more than one line. */
export function showValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (Buffer.isBuffer(value)) return "binary data";
  if (isPlainObject(value)) return "a mapping";
  if (typeof value !== "string") return scalarText(value);
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A scalar from a schema or a file as text (`4`, `mqtt`, `null`). */
export function scalarText(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    return String(value);
  return "a value of another type";
}
