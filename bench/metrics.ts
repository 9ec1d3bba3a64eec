/**
 * Scenario `metrics`: Prometheus scrapes of `/metrics` for a large fleet (1,000 PDUs × 24 outlets,
 * about 150,000 series) against a bare node:http server in its own process answering the very same
 * bytes. Measured in the serving process: CPU per scrape (process.cpuUsage around each sequential
 * scrape), the heap a scrape needs at its peak (heapUsed sampled every millisecond during scrapes,
 * garbage included, over the heap after a GC before them) and the heap scrapes leave behind (after GC). The store is filled once and not polled, so the figures are the scrape's
 * alone; with nobody scraping the metrics do no work on the poll path (the readings are built from
 * the snapshots at scrape time).
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DIST, IpcChild } from "./lib/child.js";
import type { BenchContext, ScenarioResult } from "./lib/measure.js";
import { row } from "./lib/report.js";
import { median, ratio } from "./lib/stats.js";

const MB = 1024 * 1024;

async function scrapeCpu(
  child: IpcChild,
  url: string,
  scrapes: number,
): Promise<{ ms: number[]; bytes: number }> {
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < scrapes; i++) {
    const before = await child.request<number>("cpu");
    const response = await fetch(url);
    const body = await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`GET ${url}: HTTP ${response.status}`);
    bytes = body.byteLength;
    const after = await child.request<number>("cpu");
    ms.push((after - before) / 1000);
  }
  return { ms, bytes };
}

export async function runMetrics(ctx: BenchContext): Promise<ScenarioResult> {
  const pdus = ctx.quick ? 100 : 1000;
  const scrapes = ctx.quick ? 5 : 20;
  const script = resolve(DIST, "bench/metrics-child.js");
  ctx.log(`metrics: ${pdus} PDUs × 24 outlets in the store; ${scrapes} sequential scrapes each`);
  const bridge = new IpcChild(
    script,
    ["--mode", "bridge", "--pdus", String(pdus)],
    ["--expose-gc", ...ctx.bridgeNodeArgs],
  );
  let baseline: IpcChild | null = null;
  try {
    const { port } = await bridge.ready<{ port: number }>();
    const url = `http://127.0.0.1:${port}/metrics`;
    const body = Buffer.from(await (await fetch(url)).arrayBuffer());
    const series = body
      .toString("utf8")
      .split("\n")
      .filter((l) => l !== "" && !l.startsWith("#")).length;
    const bodyFile = join(ctx.workDir, "metrics-body.txt");
    writeFileSync(bodyFile, body);
    const heapBefore = await bridge.request<number>("heap");
    const measured = await scrapeCpu(bridge, url, scrapes);
    const heapAfter = await bridge.request<number>("heap");
    // Peak heap over a few more scrapes, sampled every millisecond in the serving process.
    await bridge.request("peak-start");
    await scrapeCpu(bridge, url, 3);
    const peak = await bridge.request<number>("peak-stop");

    baseline = new IpcChild(script, ["--mode", "baseline", "--body", bodyFile], ["--expose-gc"]);
    const base = await baseline.ready<{ port: number }>();
    const baseMeasured = await scrapeCpu(baseline, `http://127.0.0.1:${base.port}/metrics`, scrapes);

    const cpu = median(measured.ms);
    const baseCpu = median(baseMeasured.ms);
    ctx.log(
      `  bridge: ${cpu?.toFixed(1)} ms CPU per scrape (median), ${series} series, ${(body.length / MB).toFixed(1)} MB; ` +
        `baseline ${baseCpu?.toFixed(1)} ms; scrape peak heap +${(peak / MB).toFixed(1)} MB, ` +
        `retained ${((heapAfter - heapBefore) / MB).toFixed(1)} MB`,
    );
    return {
      rows: [
        row({
          scenario: "metrics",
          metric: `scrape CPU, ${pdus} PDUs`,
          unit: "ms",
          target: "< 250 ms",
          measured: cpu,
          baseline: baseCpu,
          baselineLabel: "bare node:http, same bytes",
          ratio: ratio(cpu, baseCpu),
          pass: cpu !== null && cpu < 250,
        }),
        row({
          scenario: "metrics",
          metric: "scrape peak extra heap",
          unit: "MB",
          target: "< 30 MB",
          measured: peak / MB,
          baseline: null,
          ratio: null,
          pass: peak / MB < 30,
        }),
        row({
          scenario: "metrics",
          metric: "heap retained after scrapes",
          unit: "MB",
          target: "info",
          measured: (heapAfter - heapBefore) / MB,
          baseline: null,
          ratio: null,
          pass: null,
        }),
      ],
      details: {
        pdus,
        scrapes,
        series,
        bodyBytes: body.length,
        cpuMs: measured.ms,
        baselineCpuMs: baseMeasured.ms,
        heapBefore,
        heapAfter,
        peakBytes: peak,
      },
      notes: [
        `metrics: ${series} series (${(body.length / MB).toFixed(1)} MB of text); CPU is the serving process's user+system time per sequential scrape (median of ${scrapes}); baseline = bench/metrics-child.ts --mode baseline, a bare node:http server answering the same bytes.`,
      ],
    };
  } finally {
    await baseline?.stop();
    await bridge.stop();
  }
}
