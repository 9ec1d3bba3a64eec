/**
 * The screenshots of the console's assets and feeds views in docs/images/ (docs/assets.md), made
 * from the real service polling simulators: four PDUs on feeds A and B with breaker ratings, 24
 * dual-corded servers (some protected, tenants and tags), one cord switched off at its PDU so one
 * asset shows redundancy lost, and the feed-loss projection of both feeds. At 1100×720, to keep the
 * files small.
 *
 *   npm run build && node dist/scripts/assets-screenshots.js [--out docs/images]
 *
 * Needs /usr/bin/chromium. Loopback only; everything it starts is stopped at the end.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { appYaml, pduYaml, startAppHarness } from "../testkit/app-harness.js";
import { openBrowser } from "../testkit/browser.js";
import { yamlFragment } from "../testkit/config-yaml.js";
import { REPO_ROOT, sleep } from "../testkit/repo.js";
import { waitFor } from "../testkit/wait.js";

const { values } = parseArgs({ options: { out: { type: "string" } }, strict: true });
const OUT = values.out ?? join(REPO_ROOT, "docs", "images");
const OUTLETS = 24;
/** Servers per pair of PDUs: half the outlets, so that feed A's loss leaves some headroom. */
const PER_PDU = 12;
const KINDS = ["db", "web", "cache", "queue"] as const;
const TENANTS = ["acme", "globex", "initech"] as const;

type Sims = "a1" | "a2" | "b1" | "b2";

const assets: Record<string, unknown> = {};
for (let n = 0; n < 2 * PER_PDU; n++) {
  const pair = n < PER_PDU ? 1 : 2;
  const kind = KINDS[n % KINDS.length]!;
  assets[`${kind}-${String(n + 1).padStart(2, "0")}`] = {
    Label: `${kind === "db" ? "Database" : kind === "web" ? "Web server" : kind === "cache" ? "Cache" : "Queue"} ${n + 1}`,
    Tenant: TENANTS[n % TENANTS.length],
    Tags: [kind],
    ...(kind === "db" ? { Protected: true, Priority: 1 } : {}),
    Cords: [
      { Instance: `rack-a${pair}`, Outlet: n % PER_PDU },
      { Instance: `rack-b${pair}`, Outlet: n % PER_PDU },
    ],
  };
}

const h = await startAppHarness<Sims>({
  sims: {
    a1: { outlets: OUTLETS, seed: 51, frozen: true },
    a2: { outlets: OUTLETS, seed: 52, frozen: true },
    b1: { outlets: OUTLETS, seed: 53, frozen: true },
    b2: { outlets: OUTLETS, seed: 54, frozen: true },
  },
  beforeStart: (s) => {
    for (const sim of [s.a1, s.a2, s.b1, s.b2])
      for (let o = 0; o < OUTLETS; o++) sim.setOutletState(sim.deviceIds()[0]!, o, "on");
  },
  yaml: (s) =>
    appYaml({
      pdus: (["a1", "a2", "b1", "b2"] as const).map((k) =>
        pduYaml(`rack-${k}`, s[k], {
          pollInterval: 2,
          actionsEnabled: true,
          more: { Feed: k.startsWith("a") ? "A" : "B", Ratings: { Breakers: 32, Phases: 63 } },
        }),
      ),
      api: { key: "screenshots-key-0123456789abcdef" },
      extra: [
        "HomeAssistant: { DiscoveryEnabled: false }",
        yamlFragment({ Feeds: { A: { Label: "Feed A (UPS 1)" }, B: { Label: "Feed B (UPS 2)" } } }, 0),
        yamlFragment({ Assets: assets }, 0),
      ].join("\n"),
    }),
  captureLogs: false,
});

const origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
const browser = await openBrowser("assets-screenshots", { width: 1100, height: 720 });
const page = browser.page;
await mkdir(OUT, { recursive: true });

async function shoot(name: string, path: string, ready: string): Promise<void> {
  await page.goto("about:blank");
  await page.goto(`${origin}/ui/${path}`);
  await page.locator(ready).first().waitFor({ timeout: 30_000 });
  await sleep(1500);
  const file = join(OUT, `console-${name}.png`);
  await page.screenshot({ path: file });
  process.stdout.write(`wrote ${file}\n`);
}

try {
  await waitFor(
    () => [...h.app.assets.book.states()].filter((a) => a.state === "on").length === 2 * PER_PDU,
    "every asset on",
    60_000,
  );
  // web-02's cord on rack-b1 switched off at the PDU: redundancy lost after two polls.
  h.sims.b1.setOutletState(h.sims.b1.deviceIds()[0]!, 1, "off");
  await waitFor(() => h.app.assets.book.get("web-02")?.redundancy === "lost", "web-02 lost", 30_000);
  await shoot("assets", "#/assets", ".assets-table .rows .row");
  await shoot("asset", "#/assets/web-02", "table.cords");
  await shoot("feeds", "#/feeds", "table.projection");
} finally {
  await browser.close();
  await h.close();
}
