/**
 * The console's fleet view in Chromium at 1,000 instances streaming:
 * `node dist/bench/console-page.js [--quick] [--rounds N]`.
 *
 * The bridge (its own process) polls 1000 simulated 24-outlet PDUs every 10 s with the REST API on,
 * so the page's event stream carries about 100 status events a second. Two pages are measured in
 * the same run, in turn (`--rounds` times each, a fresh browser profile each time), against the
 * same stream:
 *
 * - the console (`/ui/`, the fleet view: rows windowed over the scroll, live updates changing only
 *   the rows on screen);
 * - a naive baseline: a plain table of every instance, rebuilt whole (innerHTML) once per animation
 *   frame in which status events arrived, served at the service's origin by the bench itself (a
 *   routed request, never a file of the service) and fed by the same event stream.
 *
 * Per page: the first render (navigation start to the first frame with the fleet's rows, from a
 * `performance.mark` each page sets), and the main thread's busy time per second of live updates
 * (Chromium's TaskDuration over a window, from the DevTools protocol's Performance domain). The
 * results are ratios to the baseline (lower is better), written to
 * bench/results/console-page-<timestamp>.json. --quick: 50 PDUs, one round, 10 s windows (a smoke
 * run of the harness, not a measurement). Needs /usr/bin/chromium and mosquitto.
 */
import { parseArgs } from "node:util";
import type { Page } from "playwright-core";
import { openBrowser } from "../testkit/browser.js";
import { sleep } from "./lib/child.js";
import { log, startConsoleRig } from "./lib/console-rig.js";

const { values } = parseArgs({
  options: { quick: { type: "boolean", default: false }, rounds: { type: "string" } },
  strict: true,
});
const quick = values.quick === true;
const rounds = Math.max(1, Number(values.rounds ?? (quick ? 1 : 3)));

const BASELINE_PATH = "/bench/fleet-baseline";
const CONSOLE_MARK = "pdu-bridge:fleet-first-render";
const BASELINE_MARK = "baseline:first-render";
/** When each page got its first statuses: the first render's own cost is from here. */
const CONSOLE_DATA_MARK = "pdu-bridge:first-status";
const BASELINE_DATA_MARK = "baseline:first-status";

/** The naive baseline: every row rebuilt on every frame with updates. */
const BASELINE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>baseline</title></head>
<body><table><thead><tr><th>Instance</th><th>Status</th><th>Power</th><th>Phase</th><th>Outlets</th><th>Last poll</th></tr></thead>
<tbody id="rows"></tbody></table>
<script type="module">
const statuses = new Map();
const rows = document.getElementById("rows");
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => "&#" + c.charCodeAt(0) + ";");
let scheduled = false;
let marked = false;
function render() {
  scheduled = false;
  const list = [...statuses.values()].sort((a, b) => a.id < b.id ? -1 : 1);
  rows.innerHTML = list.map((s) => "<tr><td>" + esc(s.id) + "<br>" + esc(s.host) + "</td><td>" + esc(s.status) +
    " " + esc(s.lastError) + "</td><td>" + esc(s.powerW) + " W</td><td>" + esc(s.peak && s.peak.name) + " " +
    esc(s.peak && s.peak.percent) + " %</td><td>" + esc(s.outlets) + "</td><td>" + esc(s.lastSuccessUtc) + "</td></tr>").join("");
  if (!marked && list.length > 0) { marked = true; performance.mark("${BASELINE_MARK}"); }
}
const source = new EventSource("/api/v1/events?snapshots=false");
let first = true;
source.addEventListener("status", (event) => {
  if (first) { first = false; performance.mark("${BASELINE_DATA_MARK}"); }
  for (const s of JSON.parse(event.data).instances) statuses.set(s.id, s);
  if (!scheduled) { scheduled = true; requestAnimationFrame(render); }
});
</script></body></html>`;

interface PageResult {
  readonly page: "console" | "baseline";
  readonly round: number;
  /** Navigation start to the first frame with rows, ms. */
  readonly firstRenderMs: number;
  /** The first statuses received to the first frame with rows, ms: the render's own part. */
  readonly firstRenderFromDataMs: number;
  /** Main-thread busy time per second of live updates, ms. */
  readonly mainThreadMsPerS: number;
  /** Status events per second on a stream opened beside the page. */
  readonly eventsPerS: number;
}

const rig = await startConsoleRig({ name: "console-page", quick });
const { pdus, windowS, intervalS, origin } = rig;

/** Status events per second on a stream of our own over the same window. */
async function countEvents(seconds: number): Promise<number> {
  const controller = new AbortController();
  let events = 0;
  const reading = fetch(`${origin}/api/v1/events?snapshots=false`, { signal: controller.signal })
    .then(async (response) => {
      const decoder = new TextDecoder();
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        events += (decoder.decode(chunk, { stream: true }).match(/^event: status$/gm) ?? []).length;
      }
    })
    .catch(() => undefined);
  await sleep(2000); // the connect's full state is not an update
  events = 0;
  await sleep(seconds * 1000);
  controller.abort();
  await reading;
  return events / seconds;
}

async function measure(kind: PageResult["page"], round: number): Promise<PageResult> {
  const browser = await openBrowser(`bench-${kind}`, { width: 1280, height: 800 });
  try {
    const page: Page = browser.page;
    await page.route(`${origin}${BASELINE_PATH}`, (route) =>
      route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: BASELINE_HTML }),
    );
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send("Performance.enable");
    const mark = kind === "console" ? CONSOLE_MARK : BASELINE_MARK;
    const dataMark = kind === "console" ? CONSOLE_DATA_MARK : BASELINE_DATA_MARK;
    await page.goto(kind === "console" ? `${origin}/ui/` : `${origin}${BASELINE_PATH}`);
    const deadline = Date.now() + 60_000;
    let firstRenderMs = NaN;
    while (Date.now() < deadline) {
      const at = await page.evaluate<number | null>(
        `(() => { const m = performance.getEntriesByName(${JSON.stringify(mark)})[0]; return m ? m.startTime : null; })()`,
      );
      if (at !== null) {
        firstRenderMs = at;
        break;
      }
      await sleep(100);
    }
    const dataAt = await page.evaluate<number | null>(
      `(() => { const m = performance.getEntriesByName(${JSON.stringify(dataMark)})[0]; return m ? m.startTime : null; })()`,
    );
    await sleep(5000); // settle: the connect's state handled, live updates flowing
    const busy = async () => {
      const { metrics } = await cdp.send("Performance.getMetrics");
      return metrics.find((m) => m.name === "TaskDuration")?.value ?? NaN;
    };
    const before = await busy();
    const started = Date.now();
    const eventsPerS = await countEvents(windowS);
    const seconds = (Date.now() - started) / 1000;
    const mainThreadMsPerS = (((await busy()) - before) * 1000) / seconds;
    const result = {
      page: kind,
      round,
      firstRenderMs: Math.round(firstRenderMs),
      firstRenderFromDataMs: dataAt === null ? NaN : Math.round((firstRenderMs - dataAt) * 10) / 10,
      mainThreadMsPerS: Math.round(mainThreadMsPerS * 10) / 10,
      eventsPerS: Math.round(eventsPerS),
    };
    log(JSON.stringify(result));
    return result;
  } finally {
    await browser.close();
  }
}

const median = (list: readonly number[]): number => {
  const sorted = [...list].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

try {
  log(
    `console-page: ${pdus} PDUs × 24 outlets every ${intervalS} s; ${rounds} round(s), windows of ${windowS} s`,
  );
  await rig.steady(1);
  const results: PageResult[] = [];
  for (let round = 1; round <= rounds; round++) {
    results.push(await measure("console", round));
    results.push(await measure("baseline", round));
  }
  const of = (
    kind: PageResult["page"],
    key: "firstRenderMs" | "firstRenderFromDataMs" | "mainThreadMsPerS",
  ) => median(results.filter((r) => r.page === kind).map((r) => r[key]));
  const summary = {
    firstRender: {
      consoleMs: of("console", "firstRenderMs"),
      baselineMs: of("baseline", "firstRenderMs"),
      ratio: Math.round((of("console", "firstRenderMs") / of("baseline", "firstRenderMs")) * 100) / 100,
    },
    firstRenderFromData: {
      consoleMs: of("console", "firstRenderFromDataMs"),
      baselineMs: of("baseline", "firstRenderFromDataMs"),
      ratio:
        Math.round((of("console", "firstRenderFromDataMs") / of("baseline", "firstRenderFromDataMs")) * 100) /
        100,
    },
    mainThreadPerSecond: {
      consoleMs: of("console", "mainThreadMsPerS"),
      baselineMs: of("baseline", "mainThreadMsPerS"),
      ratio: Math.round((of("console", "mainThreadMsPerS") / of("baseline", "mainThreadMsPerS")) * 100) / 100,
    },
  };
  log(
    `console-page: first render ${summary.firstRender.consoleMs} ms (baseline ${summary.firstRender.baselineMs} ms, ratio ${summary.firstRender.ratio})`,
  );
  log(
    `console-page: first render after the first data ${summary.firstRenderFromData.consoleMs} ms (baseline ${summary.firstRenderFromData.baselineMs} ms, ratio ${summary.firstRenderFromData.ratio})`,
  );
  log(
    `console-page: main thread ${summary.mainThreadPerSecond.consoleMs} ms per second of updates (baseline ${summary.mainThreadPerSecond.baselineMs} ms, ratio ${summary.mainThreadPerSecond.ratio})`,
  );
  rig.writeResults({ pdus, intervalS, windowS, rounds, quick, results, summary });
} finally {
  await rig.close();
}
