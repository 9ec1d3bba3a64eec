/**
 * The console's screenshots in docs/images/ (README.md and docs/console.md), made from the real
 * service polling simulators: a fleet with problems (an offline PDU, a never-polled one, breakers
 * and phases over 80 % and 95 % of their ratings), a PDU with its phase and breaker bars, the
 * alarms panel, the groups and outlet views, each at 1280×800 and 390×844.
 *
 *   npm run build && node dist/scripts/console-screenshots.js [--out docs/images]
 *
 * Needs /usr/bin/chromium. Loopback only; everything it starts is stopped at the end.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Page } from "playwright-core";
import type { Simulator } from "../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness } from "../testkit/app-harness.js";
import { openBrowser } from "../testkit/browser.js";
import { REPO_ROOT, sleep } from "../testkit/repo.js";

const { values } = parseArgs({ options: { out: { type: "string" } }, strict: true });
const OUT = values.out ?? join(REPO_ROOT, "docs", "images");

/** Instance id → simulator it polls (several instances may poll one simulator). */
const FLEET: readonly [string, string][] = [
  ["rack-a01", "cluster"],
  ["rack-a02", "hot"],
  ["rack-a03", "calm"],
  ["rack-a04", "warm"],
  ["rack-b01", "calm"],
  ["rack-b02", "calm"],
  ["rack-b03", "warm"],
  ["rack-b04", "gone"],
  ["rack-c01", "calm"],
  ["rack-c02", "calm"],
  ["rack-c03", "late"],
  ["rack-c04", "calm"],
];

type Sims = "cluster" | "hot" | "calm" | "warm" | "gone" | "late";

const h = await startAppHarness<Sims>({
  sims: {
    cluster: { oneview: { members: 1 }, outlets: 8, seed: 21 },
    hot: { outlets: 8, seed: 22 },
    calm: { outlets: 8, seed: 23 },
    warm: { outlets: 8, seed: 24 },
    gone: { outlets: 8, seed: 25 },
    late: { outlets: 8, seed: 26 },
  },
  // `late` never answers: its instance is never polled.
  beforeStart: (sims) => sims.late.close(),
  yaml: (sims) =>
    appYaml({
      pdus: FLEET.flatMap(([id, sim]) => [
        pduYaml(id, sims[sim as Sims], { actionsEnabled: id === "rack-a01", pollInterval: 2, timeout: 1 }),
        "    Ratings: { Breakers: 16, Phases: 32 }",
      ]),
      api: { key: "screenshots-key-0123456789abcdef" },
    }),
  captureLogs: false,
});

const pin = (sim: Simulator, amps: Readonly<Record<string, number>>) => {
  for (const deviceId of sim.deviceIds())
    for (const [key, a] of Object.entries(amps)) sim.setEntityCurrent(deviceId, key, a);
};
pin(h.sims.hot, { phase0: 30.9, breaker0: 15.6, breaker1: 12.1 });
pin(h.sims.warm, { phase0: 26.2, breaker0: 13.4, breaker1: 9.8 });
pin(h.sims.cluster, { phase0: 21.5, breaker0: 11.2, breaker1: 12.9 });
pin(h.sims.calm, { phase0: 9.4, breaker0: 4.8, breaker1: 4.6 });
pin(h.sims.gone, { phase0: 12.1, breaker0: 6.2, breaker1: 5.9 });
for (const [id] of FLEET) if (id !== "rack-c03") await h.waitForPoll(id, 0, 30_000);
// `gone` stops answering after its first polls: its instance shows its last values, stale.
await h.sims.gone.close();
await sleep(9000);

const origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
const browser = await openBrowser("screenshots", { width: 1280, height: 800 });
const page: Page = browser.page;
await mkdir(OUT, { recursive: true });

const VIEWPORTS = [
  { suffix: "", width: 1280, height: 800 },
  { suffix: "-phone", width: 390, height: 844 },
] as const;

async function shoot(name: string, path: string, ready: string, element?: string): Promise<void> {
  for (const v of VIEWPORTS) {
    await page.setViewportSize({ width: v.width, height: v.height });
    await page.goto("about:blank");
    await page.goto(`${origin}/ui/${path}`);
    await page.locator(ready).first().waitFor({ timeout: 20_000 });
    await sleep(1500);
    const file = join(OUT, `console-${name}${v.suffix}.png`);
    if (element === undefined) await page.screenshot({ path: file });
    else {
      await page.locator(element).scrollIntoViewIfNeeded();
      await page.locator(element).screenshot({ path: file });
    }
    process.stdout.write(`wrote ${file}\n`);
  }
}

try {
  const cluster = h.sims.cluster.deviceIds()[0]!;
  await shoot("fleet", "#/", ".fleet-table .rows .row");
  await shoot("alarms", "#/", ".alarm-item", ".side");
  await shoot("pdu", "#/i/rack-a01", ".load-row");
  await shoot("pdu-offline", "#/i/rack-b04", ".banner");
  await shoot("groups", "#/i/rack-a01/groups", "section.group");
  await shoot("outlet", `#/i/rack-a01/o/${cluster}/2`, "svg.chart path.line");
} finally {
  await browser.close();
  await h.close();
}
