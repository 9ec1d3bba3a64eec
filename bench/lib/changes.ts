/**
 * The share of a PDU's measurement values that change from one poll to the next: two reads of
 * `GET /api`, one interval apart, of a sample of the fleet, compared value by value (outlets and
 * entities). This is what a change-only publisher can skip, measured rather than assumed. The same
 * reads give the size of the PDUs' answers (the bytes a poll parses).
 */
import { sleep } from "./child.js";
import { row, type Row } from "./report.js";

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

export interface ChangingShare {
  /** Share (0..1) of the sampled values that changed between the two reads. */
  readonly share: number;
  readonly values: number;
  readonly pdus: number;
  /** Body bytes of one `GET /api` over both reads of every sampled PDU. */
  readonly answerBytes: { readonly min: number; readonly max: number; readonly mean: number };
}

/** Reads up to `sample` PDUs twice, `intervalMs` apart; the share of values that changed. */
export async function measureChangingShare(
  ports: readonly number[],
  intervalMs: number,
  sample = 20,
): Promise<ChangingShare> {
  const step = Math.max(1, Math.floor(ports.length / sample));
  const picked = ports.filter((_, i) => i % step === 0).slice(0, sample);
  const sizes: number[] = [];
  const read = () =>
    Promise.all(
      picked.map(async (port) => {
        const body = Buffer.from(await (await fetch(`http://127.0.0.1:${port}/api`)).arrayBuffer());
        sizes.push(body.length);
        return measurementValues(JSON.parse(body.toString("utf8")));
      }),
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
  return {
    share: values === 0 ? 0 : changed / values,
    values,
    pdus: picked.length,
    answerBytes: {
      min: Math.min(...sizes),
      max: Math.max(...sizes),
      mean: sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length),
    },
  };
}

/** What a realistic fleet answers: 21–27 kB per 24-outlet PDU, 55–75 % of its values changing per poll. */
export const REALISTIC_ANSWER_KB = { min: 21, max: 27 } as const;
export const REALISTIC_CHANGING_PERCENT = { min: 55, max: 75 } as const;

/**
 * The rows that say the simulated fleet is realistic: the answer size of one `GET /api` and the
 * share of values changing per poll, against the ranges above. `judgeShare` false: the share is
 * information only (a quick run's 2 s polls see fewer changes than 10 s ones).
 */
export function fleetShapeRows(
  scenario: string,
  c: ChangingShare,
  o: { prefix?: string; judgeShare: boolean; shareNote?: string },
): Row[] {
  const kb = REALISTIC_ANSWER_KB;
  const pct = REALISTIC_CHANGING_PERCENT;
  const share = Math.round(c.share * 1000) / 10;
  const sizeOk = c.answerBytes.min >= kb.min * 1000 && c.answerBytes.max <= kb.max * 1000;
  return [
    row({
      scenario,
      metric: `${o.prefix ?? ""}answer of one GET /api (24-outlet PDU)`,
      unit: "kB",
      target: `${kb.min}–${kb.max} kB`,
      measured: c.answerBytes.mean / 1000,
      baseline: null,
      ratio: null,
      pass: sizeOk,
      ...(sizeOk
        ? {}
        : {
            note: `answers of ${c.answerBytes.min} to ${c.answerBytes.max} bytes over ${c.pdus} sampled PDUs`,
          }),
    }),
    row({
      scenario,
      metric: `${o.prefix ?? ""}values changing per poll (sampled)`,
      unit: "%",
      target: o.judgeShare ? `${pct.min}–${pct.max} %` : "info",
      measured: share,
      baseline: null,
      ratio: null,
      pass: o.judgeShare ? share >= pct.min && share <= pct.max : null,
      ...(o.shareNote === undefined ? {} : { note: o.shareNote }),
    }),
  ];
}
