/**
 * A V8 heap snapshot (the `.heapsnapshot` format Chrome's DevTools read) taken through the
 * inspector, and its breakdown: retained sizes from the dominator tree (Cooper, Harvey and
 * Kennedy's iterative algorithm), summed for the service's own parts (named classes) and for the
 * kinds of strings it holds (topics, discovery). Used by bench/heap-breakdown.ts.
 */
import { openInspector } from "./inspector-profile.js";

interface RawSnapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Takes a heap snapshot of the process whose log (`log()`) names its inspector URL. */
export async function takeHeapSnapshot(log: () => string, timeoutMs = 30_000): Promise<string> {
  const ws = await openInspector(log, timeoutMs);
  const chunks: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    ws.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as {
        id?: number;
        method?: string;
        params?: { chunk?: string };
        error?: { message: string };
      };
      if (message.method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(message.params?.chunk ?? "");
      else if (message.id === 2) {
        if (message.error) reject(new Error(message.error.message));
        else resolve();
      }
    });
    ws.addEventListener("close", () => reject(new Error("inspector connection closed")));
  });
  ws.send(JSON.stringify({ id: 1, method: "HeapProfiler.enable", params: {} }));
  // takeHeapSnapshot runs a full collection first: what is left is live.
  ws.send(
    JSON.stringify({ id: 2, method: "HeapProfiler.takeHeapSnapshot", params: { reportProgress: false } }),
  );
  await done;
  ws.close();
  return chunks.join("");
}

export interface BreakdownRow {
  readonly part: string;
  readonly bytes: number;
  readonly count: number;
}

export interface Breakdown {
  readonly totalBytes: number;
  readonly nodes: number;
  /** Retained size of the service's parts (instances not held by another instance of the same class). */
  readonly parts: readonly BreakdownRow[];
  /** Own size of strings by what they are. */
  readonly strings: readonly BreakdownRow[];
  /** Own size by constructor or node type, largest first. */
  readonly top: readonly BreakdownRow[];
  /** With `explain`: that class's instances by their chain of dominators (retained sizes). */
  readonly explained: readonly BreakdownRow[];
}

/** Classes whose retained size is a row of the breakdown. */
export const PARTS: readonly string[] = [
  "App",
  "SnapshotStore",
  "Publisher",
  "Track",
  "Poller",
  "GeistClient",
  "Client",
  "Pool",
  "PowerHistory",
  "MqttConnection",
  "MqttClient",
  "Pino",
  "ReadBodies",
];

/** Parses a heap snapshot and sums it by part. `topicPrefixes`: what starts a topic string. */
export function breakdown(
  json: string,
  topicPrefixes: readonly string[],
  topN = 20,
  explain?: string,
): Breakdown {
  const raw = JSON.parse(json) as RawSnapshot;
  const meta = raw.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const nType = meta.node_fields.indexOf("type");
  const nName = meta.node_fields.indexOf("name");
  const nSize = meta.node_fields.indexOf("self_size");
  const nEdges = meta.node_fields.indexOf("edge_count");
  const eType = meta.edge_fields.indexOf("type");
  const eTo = meta.edge_fields.indexOf("to_node");
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const weak = edgeTypes.indexOf("weak");
  const shortcut = edgeTypes.indexOf("shortcut");
  const { nodes, edges, strings } = raw;
  const n = nodes.length / nf;

  // Edges of node i are edges[firstEdge[i] .. firstEdge[i + 1]).
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += nodes[i * nf + nEdges]! * ef;
  }
  firstEdge[n] = edges.length;
  const target = (e: number) => edges[e + eTo]! / nf;
  const strong = (e: number) => edges[e + eType] !== weak && edges[e + eType] !== shortcut;

  // Postorder from the root (node 0) over strong edges.
  const post = new Int32Array(n).fill(-1);
  const order = new Uint32Array(n);
  const visited = new Uint8Array(n);
  const stackNode = new Uint32Array(n);
  const stackEdge = new Uint32Array(n);
  let sp = 0;
  let count = 0;
  stackNode[0] = 0;
  stackEdge[0] = firstEdge[0]!;
  visited[0] = 1;
  sp = 1;
  while (sp > 0) {
    const v = stackNode[sp - 1]!;
    let e = stackEdge[sp - 1]!;
    let pushed = false;
    for (; e < firstEdge[v + 1]!; e += ef) {
      if (!strong(e)) continue;
      const w = target(e);
      if (visited[w]) continue;
      visited[w] = 1;
      stackEdge[sp - 1] = e + ef;
      stackNode[sp] = w;
      stackEdge[sp] = firstEdge[w]!;
      sp++;
      pushed = true;
      break;
    }
    if (!pushed) {
      post[v] = count;
      order[count++] = v;
      sp--;
    }
  }

  // Predecessors (reachable ones only), as CSR.
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (!visited[v]) continue;
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += ef) if (strong(e)) predCount[target(e) + 1]!++;
  }
  for (let i = 0; i < n; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Uint32Array(predCount[n]!);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (!visited[v]) continue;
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += ef) if (strong(e)) preds[fill[target(e)]!++] = v;
  }

  // Immediate dominators, by postorder number.
  const idom = new Int32Array(count).fill(-1);
  const root = count - 1;
  idom[root] = root;
  for (let changed = true; changed;) {
    changed = false;
    for (let b = root - 1; b >= 0; b--) {
      const v = order[b]!;
      let next = -1;
      for (let p = predCount[v]!; p < predCount[v + 1]!; p++) {
        let a = post[preds[p]!]!;
        if (a < 0 || idom[a] === -1) continue;
        if (next === -1) {
          next = a;
          continue;
        }
        let c = next;
        while (a !== c) {
          while (a < c) a = idom[a]!;
          while (c < a) c = idom[c]!;
        }
        next = a;
      }
      if (next !== -1 && idom[b] !== next) {
        idom[b] = next;
        changed = true;
      }
    }
  }

  const retained = new Float64Array(count);
  for (let b = 0; b < count; b++) retained[b] = nodes[order[b]! * nf + nSize]!;
  for (let b = 0; b < root; b++) retained[idom[b]!]! += retained[b]!;

  const name = (v: number) => strings[nodes[v * nf + nName]!]!;
  const type = (v: number) => nodeTypes[nodes[v * nf + nType]!]!;

  // Parts: instances not dominated by another instance of the same class.
  const parts = new Map<string, { bytes: number; count: number }>(
    PARTS.map((p) => [p, { bytes: 0, count: 0 }]),
  );
  const partOf = (b: number) => (type(order[b]!) === "object" ? name(order[b]!) : "");
  for (let b = 0; b < root; b++) {
    const cls = partOf(b);
    const row = parts.get(cls);
    if (row === undefined) continue;
    let up = idom[b]!;
    let nested = false;
    for (let depth = 0; up !== root && depth < 10_000; depth++, up = idom[up]!) {
      if (partOf(up) === cls) {
        nested = true;
        break;
      }
    }
    if (nested) continue;
    row.bytes += retained[b]!;
    row.count++;
  }

  const stringRows = new Map<string, { bytes: number; count: number }>();
  const own = new Map<string, { bytes: number; count: number }>();
  let total = 0;
  for (let b = 0; b < count; b++) {
    const v = order[b]!;
    const size = nodes[v * nf + nSize]!;
    total += size;
    const t = type(v);
    const key = t === "object" || t === "closure" ? name(v) || t : `(${t})`;
    const r = own.get(key) ?? { bytes: 0, count: 0 };
    r.bytes += size;
    r.count++;
    own.set(key, r);
    if (t === "string" || t === "concatenated string" || t === "sliced string") {
      const s = name(v);
      const kind = topicPrefixes.some((p) => s.startsWith(p))
        ? s.startsWith("homeassistant/")
          ? "discovery topics"
          : "topics"
        : s.startsWith("{") && s.includes('"unique_id"')
          ? "discovery payloads"
          : "other strings";
      const sr = stringRows.get(kind) ?? { bytes: 0, count: 0 };
      sr.bytes += size;
      sr.count++;
      stringRows.set(kind, sr);
    }
  }
  const explained = new Map<string, { bytes: number; count: number }>();
  if (explain !== undefined) {
    const label = (b: number) => {
      const v = order[b]!;
      const t = type(v);
      return t === "object" || t === "closure" ? name(v) : `(${t})`;
    };
    for (let b = 0; b < root; b++) {
      if (label(b) !== explain) continue;
      const chain: string[] = [];
      for (let up = idom[b]!, depth = 0; up !== root && depth < 12; up = idom[up]!, depth++)
        chain.push(label(up));
      const key = chain.slice(0, 6).join(" < ");
      const r = explained.get(key) ?? { bytes: 0, count: 0 };
      r.bytes += retained[b]!;
      r.count++;
      explained.set(key, r);
    }
  }
  const rows = (m: Map<string, { bytes: number; count: number }>) =>
    [...m].map(([part, r]) => ({ part, ...r })).sort((a, b) => b.bytes - a.bytes);
  return {
    totalBytes: total,
    nodes: count,
    parts: rows(parts),
    strings: rows(stringRows),
    top: rows(own).slice(0, topN),
    explained: rows(explained).slice(0, topN),
  };
}

/** The breakdown as Markdown tables, with bytes per PDU. */
export function formatBreakdown(b: Breakdown, pdus: number): string {
  const mb = (x: number) => (x / 1024 / 1024).toFixed(1);
  const kb = (x: number) => (x / 1024 / pdus).toFixed(1);
  const table = (title: string, rows: readonly BreakdownRow[]) => [
    `| ${title} | count | MB | KB per PDU |`,
    "|---|---|---|---|",
    ...rows.map((r) => `| ${r.part} | ${r.count} | ${mb(r.bytes)} | ${kb(r.bytes)} |`),
  ];
  return [
    `live heap ${mb(b.totalBytes)} MB in ${b.nodes} objects: ${kb(b.totalBytes)} KB per PDU (${pdus} PDUs)`,
    "",
    ...table("retained by (class)", b.parts),
    "",
    ...table("strings", b.strings),
    "",
    ...table("own size by constructor", b.top),
    ...(b.explained.length > 0 ? ["", ...table("held by (dominator chain)", b.explained)] : []),
  ].join("\n");
}
