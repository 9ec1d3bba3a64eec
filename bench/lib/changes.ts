/**
 * The share of a PDU's measurement values that change from one poll to the next: two reads of
 * `GET /api`, one interval apart, of a sample of the fleet, compared value by value (outlets and
 * entities). This is what a change-only publisher can skip, measured rather than assumed.
 */
import { sleep } from "./child.js";

interface Node {
  measurement?: Record<string, { type?: string; value?: string }>;
}
interface Tree {
  data?: { dev?: Record<string, { outlet?: Record<string, Node>; entity?: Record<string, Node> }> };
}

/** `path → value` of every measurement in one `/api` answer. */
export function measurementValues(tree: unknown): Map<string, string> {
  const out = new Map<string, string>();
  for (const [id, device] of Object.entries((tree as Tree).data?.dev ?? {})) {
    for (const [kind, nodes] of [
      ["outlet", device.outlet],
      ["entity", device.entity],
    ] as const) {
      for (const [key, node] of Object.entries(nodes ?? {}))
        for (const [k, m] of Object.entries(node.measurement ?? {}))
          out.set(`${id}/${kind}/${key}/${k}`, String(m.value));
    }
  }
  return out;
}

/** Share (0..1) of the values in `before` that differ in `after` (a missing value counts as changed). */
export function changedShare(
  before: ReadonlyMap<string, string>,
  after: ReadonlyMap<string, string>,
): number {
  if (before.size === 0) return 0;
  let changed = 0;
  for (const [k, v] of before) if (after.get(k) !== v) changed++;
  return changed / before.size;
}

/** Reads up to `sample` PDUs twice, `intervalMs` apart; the share of values that changed. */
export async function measureChangingShare(
  ports: readonly number[],
  intervalMs: number,
  sample = 20,
): Promise<{ share: number; values: number; pdus: number }> {
  const step = Math.max(1, Math.floor(ports.length / sample));
  const picked = ports.filter((_, i) => i % step === 0).slice(0, sample);
  const read = () =>
    Promise.all(
      picked.map(async (port) =>
        measurementValues(await (await fetch(`http://127.0.0.1:${port}/api`)).json()),
      ),
    );
  const first = await read();
  await sleep(intervalMs);
  const second = await read();
  let values = 0;
  let changed = 0;
  first.forEach((before, i) => {
    values += before.size;
    changed += changedShare(before, second[i]!) * before.size;
  });
  return { share: values === 0 ? 0 : changed / values, values, pdus: picked.length };
}
