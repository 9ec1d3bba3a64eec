/**
 * YAML text → plain data, plus what plain data loses: the line of every key and the order of the
 * keys of every mapping (a JS object puts integer-like keys such as "1" and "2" first).
 */
import { isMap, isScalar, LineCounter, parseDocument, Parser, type YAMLMap } from "yaml";
import { ConfigError } from "./errors.js";

export type KeyPath = readonly string[];

export interface ParsedYaml {
  /** The document as plain data (mappings are plain objects with string keys). */
  readonly value: unknown;
  /** The 1-based line of the key at `path`, else of its nearest ancestor that is in the file. */
  lineOf(path: KeyPath): number | undefined;
  /** Whether the key at `path` is written in the file (not only inherited through a merge key). */
  has(path: KeyPath): boolean;
  /** The keys of the mapping at `path` in file order (empty when it is not a mapping). */
  keysOf(path: KeyPath): string[];
}

const pathKey = (path: KeyPath) => JSON.stringify(path);

/**
 * Deepest nesting of collections (block or flow) accepted. A configuration needs about 4; yaml's
 * composer recurses per level and overflows the stack somewhere near 800 (where exactly depends on
 * how deep the caller's stack already is, so the message would not even be stable), and after one
 * such overflow the next deep document parsed in the same process can abort Node (a fatal V8
 * "RegExpCompiler allocation failed"): the Kubernetes source re-parses every ConfigMap change in the
 * running service.
 */
export const MAX_DEPTH = 64;

const COLLECTIONS = new Set(["block-map", "block-seq", "flow-collection"]);

/**
 * The 1-based line where collections first nest deeper than {@link MAX_DEPTH}, or null. Walks yaml's
 * concrete syntax tree, which its parser builds without recursion, with an explicit stack.
 */
export function tooDeepAt(text: string): number | null {
  type Node = { type?: unknown; offset?: unknown; items?: unknown; value?: unknown; key?: unknown };
  const stack: { node: Node; depth: number }[] = [];
  for (const token of new Parser().parse(text)) stack.push({ node: token, depth: 0 });
  while (stack.length > 0) {
    const { node, depth: outer } = stack.pop()!;
    const depth = typeof node.type === "string" && COLLECTIONS.has(node.type) ? outer + 1 : outer;
    if (depth > MAX_DEPTH) {
      const offset = typeof node.offset === "number" ? node.offset : 0;
      return text.slice(0, offset).split("\n").length;
    }
    const children: unknown[] = [node.value, node.key];
    if (Array.isArray(node.items)) {
      for (const item of node.items as { key?: unknown; value?: unknown }[])
        children.push(item.key, item.value);
    }
    for (const child of children) {
      if (typeof child === "object" && child !== null) stack.push({ node: child, depth });
    }
  }
  return null;
}

/**
 * The YAML library's message without the text it quotes from the file after a colon
 * ("Block scalar header includes extra characters: >s3cret"): that text may be a secret, and the
 * message already carries the line.
 */
function withoutQuotedSource(message: string, text: string): string {
  const colon = message.indexOf(": ");
  if (colon < 0) return message;
  const quoted = message.slice(colon + 2).trim();
  return quoted.length > 0 && text.includes(quoted) ? message.slice(0, colon) : message;
}

/** Parses one YAML document; syntax errors and an empty document are {@link ConfigError}s. */
export function parseYaml(text: string, origin: string): ParsedYaml {
  const deep = tooDeepAt(text);
  if (deep !== null) {
    throw new ConfigError("", `invalid YAML: collections nested more than ${MAX_DEPTH} levels deep`, {
      file: origin,
      line: deep,
    });
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, stringKeys: true, merge: true, prettyErrors: true });
  const [error] = doc.errors;
  if (error !== undefined) {
    const firstLine = error.message.split("\n")[0] ?? error.message;
    const problem = withoutQuotedSource(firstLine.replace(/ at line \d+, column \d+:?$/, ""), text);
    throw new ConfigError("", `invalid YAML: ${problem}`, { file: origin, line: error.linePos?.[0].line });
  }
  if (doc.contents === null) throw new ConfigError("", "the file is empty", { file: origin });

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 1000 });
  } catch (cause) {
    // An unresolved or runaway alias is only found when the data is built.
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new ConfigError("", `invalid YAML: ${withoutQuotedSource(message, text)}`, { file: origin });
  }

  const lines = new Map<string, number>();
  const maps = new Map<string, YAMLMap>();
  const visit = (node: YAMLMap, path: string[]) => {
    maps.set(pathKey(path), node);
    for (const pair of node.items) {
      if (!isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      const keyPath = [...path, key];
      const offset = pair.key.range?.[0];
      if (offset !== undefined) lines.set(pathKey(keyPath), lineCounter.linePos(offset).line);
      if (isMap(pair.value)) visit(pair.value, keyPath);
    }
  };
  if (isMap(doc.contents)) visit(doc.contents, []);

  return {
    value,
    lineOf(path) {
      for (let n = path.length; n > 0; n--) {
        const line = lines.get(pathKey(path.slice(0, n)));
        if (line !== undefined) return line;
      }
      return undefined;
    },
    has: (path) => lines.has(pathKey(path)),
    keysOf(path) {
      const map = maps.get(pathKey(path));
      if (map === undefined) return [];
      return map.items.flatMap((pair) => (isScalar(pair.key) ? [String(pair.key.value)] : []));
    },
  };
}
