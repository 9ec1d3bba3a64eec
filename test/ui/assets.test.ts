/**
 * The console's assets and feeds views in a real browser, against the whole service polling the
 * simulators: 1,000 assets, each with one cord on a feed-A PDU and one on a feed-B PDU (twenty
 * instances over two simulators of 100 outlets each: the views are what is under test). The list
 * shows every asset with only the rows on screen in the page, the search and filters narrow it,
 * the keyboard reaches a row, opens its detail and comes back; a cord switched off in the simulator
 * shows as redundancy lost in the list and in the detail; the feeds view shows each feed's
 * projection with its headroom; an asset label and a PDU entity label that are markup show as text.
 * axe-core checks each view, and the page breaks no rule of its Content-Security-Policy.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { yamlFragment } from "../../testkit/config-yaml.js";
import { waitFor } from "../../testkit/wait.js";

const skip = chromiumMissing;
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const ASSETS = 1000;
const PER_INSTANCE = 100;
const INSTANCES = ASSETS / PER_INSTANCE;
const HOSTILE_LABEL = "<img src=x onerror=window.pwned=1>";
const HOSTILE_ENTITY = "<img src=y onerror=window.pwned=2>";
/** The outlet of sim b switched off: cord 2 of asset-0007, asset-0107, ... asset-0907. */
const CUT = 7;

const assetId = (n: number) => `asset-${String(n).padStart(4, "0")}`;
const inst = (feed: "a" | "b", n: number) => `${feed}-${String(n).padStart(2, "0")}`;

let h: AppHarness<"a" | "b">;
let browser: BrowserSession | undefined;
let page: Page;
let origin: string;

/** Sets an entity's label through the simulator's own API, as a PDU's web page would. */
async function labelEntity(port: number, deviceId: string, key: string, label: string): Promise<void> {
  const post = async (path: string, body: object) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return (await res.json()) as { data?: { token?: string } };
  };
  const login = await post("/api/auth/admin", { cmd: "login", data: { password: "admin" } });
  const token = login.data?.token;
  assert.ok(typeof token === "string", JSON.stringify(login));
  await post(`/api/dev/${deviceId}/entity/${key}`, { cmd: "set", token, data: { label } });
}

before(async () => {
  if (skip) return;
  const assets: Record<string, unknown> = {};
  for (let n = 0; n < ASSETS; n++) {
    const i = Math.floor(n / PER_INSTANCE);
    const outlet = n % PER_INSTANCE;
    assets[assetId(n)] = {
      ...(n === 1 ? { Label: HOSTILE_LABEL } : {}),
      ...(n % 10 === 0 ? { Protected: true } : {}),
      Tenant: n % 2 === 0 ? "acme" : "globex",
      Tags: [n < 500 ? "web" : "db"],
      Cords: [
        { Instance: inst("a", i), Outlet: outlet },
        { Instance: inst("b", i), Outlet: outlet },
      ],
    };
  }
  h = await startAppHarness<"a" | "b">({
    sims: {
      a: { outlets: PER_INSTANCE, seed: 41, frozen: true },
      b: { outlets: PER_INSTANCE, seed: 42, frozen: true },
    },
    beforeStart: async (s) => {
      for (const sim of [s.a, s.b])
        for (let o = 0; o < PER_INSTANCE; o++) sim.setOutletState(sim.deviceIds()[0]!, o, "on");
      await labelEntity(s.b.port, s.b.deviceIds()[0]!, "breaker0", HOSTILE_ENTITY);
    },
    yaml: (s) =>
      appYaml({
        pdus: Array.from({ length: INSTANCES }, (_, i) =>
          (["a", "b"] as const).map((f) =>
            [
              pduYaml(inst(f, i), s[f], {
                pollInterval: 2,
                actionsEnabled: true,
                relayProtection: 0,
                more: { Feed: f.toUpperCase() },
              }),
              "    Ratings: { Breakers: 16, Phases: 32 }",
            ].join("\n"),
          ),
        ).flat(),
        api: { key: "assets-console-key-6b1d0e7f93a2" },
        extra: [
          "HomeAssistant: { DiscoveryEnabled: false }",
          yamlFragment({ Feeds: { A: { Label: "Feed A (UPS 1)" }, B: { Label: "Feed B (UPS 2)" } } }, 0),
          yamlFragment({ Assets: assets }, 0),
        ].join("\n"),
      }),
  });
  await waitFor(
    () => [...h.app.assets.book.states()].filter((a) => a.state === "on").length === ASSETS,
    "every asset on",
    120_000,
  );
  origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
  browser = await openBrowser("assets", { width: 1280, height: 800 });
  ({ page } = browser);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await h?.close();
});

/** The asset ids of the rows in the page, top to bottom. */
function rowIds(): Promise<string[]> {
  return page.evaluate<string[]>(
    `[...document.querySelectorAll(".assets-table .rows [data-asset]")]
      .map((r) => ({ id: r.dataset.asset, top: r.getBoundingClientRect().top }))
      .sort((a, b) => a.top - b.top)
      .map((r) => r.id)`,
  );
}

const count = (filter: string) => page.locator(`.chip.f-${filter} .count`).textContent();

async function axeSerious(): Promise<unknown[]> {
  if (!(await page.evaluate<boolean>("typeof axe !== 'undefined'"))) await page.evaluate(AXE_SOURCE);
  return page.evaluate<unknown[]>(
    `axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target) })))`,
  );
}

test(
  "1,000 assets: every one listed, only the rows on screen in the page, axe clean",
  { skip },
  async (t) => {
    await page.goto(`${origin}/ui/#/assets`);
    await waitFor(async () => (await count("all")) === String(ASSETS), "every asset", 60_000);
    // Measured in the browser: from the navigation to the first rows on screen.
    const firstRows = await page.evaluate<number>(
      `performance.getEntriesByName("pdu-bridge:assets-first-render")[0]?.startTime ?? -1`,
    );
    t.diagnostic(`first rows of 1,000 assets on screen ${Math.round(firstRows)} ms after the navigation`);
    const rows = await rowIds();
    assert.ok(
      rows.length > 5 && rows.length < 60,
      `only the rows on screen are in the page (${rows.length})`,
    );
    assert.equal(await count("protected"), String(ASSETS / 10));
    assert.equal(await count("lost"), "0");
    const row = page.locator(`[data-asset="${assetId(0)}"]`);
    const text = (await row.textContent()) ?? "";
    assert.match(text, /acme/);
    assert.match(text, /On/);
    assert.match(text, /protected/);
    assert.match(text, /2\/2 live: a-00 #1 live · b-00 #1 live/);
    assert.deepEqual(await axeSerious(), []);
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)");
    await waitFor(
      async () => (await rowIds()).includes(assetId(ASSETS - 1)),
      "the last row after scrolling",
      10_000,
    );
    assert.ok((await rowIds()).length < 60);
    await page.evaluate("window.scrollTo(0, 0)");
  },
);

test("search and filters narrow the list; a column sorts", { skip }, async () => {
  await page.locator("#asset-filter").fill("asset-012");
  await waitFor(async () => (await rowIds()).length === 10, "asset-0120 … asset-0129", 10_000);
  assert.deepEqual(
    (await rowIds()).sort(),
    Array.from({ length: 10 }, (_, i) => assetId(120 + i)),
  );
  await page.locator("#asset-filter").fill("globex db");
  await waitFor(
    async () => (await page.locator(".sr-only[aria-live]").textContent()) === "250 of 1000 assets shown",
    "globex and db",
  );
  await page.locator("#asset-filter").fill("");
  await page.locator(".chip.f-protected").click();
  await waitFor(
    async () => (await page.locator(".sr-only[aria-live]").textContent()) === "100 of 1000 assets shown",
    "protected only",
  );
  await page.locator(".chip.f-all").click();
  await page.locator("button.sort[data-sort=asset]").click();
  await page.locator("button.sort[data-sort=asset]").click();
  await waitFor(async () => (await rowIds())[0] === assetId(ASSETS - 1), "by id, descending", 10_000);
  await page.locator("button.sort[data-sort=asset]").click();
  await waitFor(async () => (await rowIds())[0] === assetId(0), "by id", 10_000);
});

test("a markup label of the configuration and of the PDU shows as text", { skip }, async () => {
  const row = page.locator(`[data-asset="${assetId(1)}"]`);
  assert.ok(((await row.textContent()) ?? "").includes(HOSTILE_LABEL));
  await page.goto(`${origin}/ui/#/feeds`);
  await page.locator("[data-feed=A] table.projection").waitFor({ timeout: 30_000 });
  await waitFor(
    async () => ((await page.locator("[data-feed=A]").textContent()) ?? "").includes(HOSTILE_ENTITY),
    "the PDU's breaker label in feed A's projection",
    30_000,
  );
  assert.equal(await page.evaluate<number>("document.querySelectorAll('img').length"), 0);
  assert.equal(await page.evaluate<unknown>("window.pwned"), undefined);
});

test("the feeds view: each feed's load and its projection with headroom, axe clean", { skip }, async () => {
  const a = page.locator("[data-feed=A]");
  const b = page.locator("[data-feed=B]");
  assert.match((await a.locator("h2").textContent()) ?? "", /Feed A \(UPS 1\)/);
  assert.match((await b.locator("h3").textContent()) ?? "", /If Feed B \(UPS 2\) is lost/);
  // Feed A's loss moves each asset's cord-A current onto the b instances' breakers.
  const rows = a.locator("table.projection tbody tr");
  await waitFor(async () => (await rows.count()) > 0, "projected entities", 30_000);
  const first = (await rows.first().textContent()) ?? "";
  assert.match(first, /b-\d\d/);
  assert.match(first, /\+\d+\.\d\d A/);
  assert.match(first, /A left|over by/);
  assert.ok((await a.locator('.bar[role="meter"]').count()) > 0, "bars against ratings");
  assert.deepEqual(await axeSerious(), []);
});

test("keyboard: tab to a row, open its detail, back to the list", { skip }, async () => {
  await page.goto(`${origin}/ui/#/assets`);
  await waitFor(async () => (await count("all")) === String(ASSETS), "the list", 30_000);
  await page.locator("#asset-filter").focus();
  await page.keyboard.type("asset-0042");
  await waitFor(async () => (await rowIds()).length === 1, "one row", 10_000);
  const target = `#/assets/${assetId(42)}`;
  for (let i = 0; i < 20; i++) {
    await page.keyboard.press("Tab");
    if (
      (await page.evaluate<string | null>("document.activeElement?.getAttribute('href') ?? null")) === target
    )
      break;
  }
  assert.equal(await page.evaluate<string | null>("document.activeElement?.getAttribute('href')"), target);
  await page.keyboard.press("Enter");
  await page.locator("table.cords").waitFor();
  assert.equal(new URL(page.url()).hash, target);
  assert.match((await page.locator("main h1").textContent()) ?? "", /asset-0042/);
  assert.equal(await page.locator("table.cords tbody tr").count(), 2);
  assert.ok((await page.locator(".asset-controls").count()) === 0, "no controls without the key");
  assert.deepEqual(await axeSerious(), []);
  await page.keyboard.press("Tab");
  assert.equal(
    await page.evaluate<string | null>("document.activeElement?.textContent ?? null"),
    "← All assets",
  );
  await page.keyboard.press("Enter");
  await waitFor(async () => (await rowIds()).join() === assetId(42), "the list as it was", 10_000);
  assert.equal(await page.locator("#asset-filter").inputValue(), "asset-0042");
  await page.locator("#asset-filter").fill("");
});

test("a cord switched off in the simulator shows redundancy lost, live", { skip }, async () => {
  await page.goto(`${origin}/ui/#/assets/${assetId(CUT)}`);
  await page.locator('[data-redundancy="ok"]').waitFor({ timeout: 30_000 });
  // The keyboard's place survives the live update that rebuilds the view.
  await page.locator('table.cords tr[data-cord="1"] a[href="#/i/b-00"]').focus();
  h.sims.b.setOutletState(h.sims.b.deviceIds()[0]!, CUT, "off");
  await page.locator('[data-redundancy="lost"]').waitFor({ timeout: 60_000 });
  assert.equal(
    await page.evaluate<string | null>("document.activeElement?.getAttribute('href') ?? null"),
    "#/i/b-00",
  );
  assert.match((await page.locator('table.cords tr[data-cord="1"]').textContent()) ?? "", /off/);
  await page.goto(`${origin}/ui/#/assets`);
  await waitFor(
    async () => (await count("lost")) === String(INSTANCES),
    "the ten assets on that outlet",
    30_000,
  );
  await page.locator(".chip.f-lost").click();
  await waitFor(async () => (await rowIds()).length === INSTANCES, "only they are shown", 10_000);
  assert.match(
    (await page.locator(`[data-asset="${assetId(CUT)}"]`).textContent()) ?? "",
    /Lost.*1\/2 live.*b-00 #8 off/,
  );
  await page.locator(".chip.f-all").click();
  assert.deepEqual(await page.evaluate<string[]>("window.cspViolations"), []);
});

test(
  "with the API key: an asset's Off goes through asset control to both cords; a protected asset has no Off",
  { skip },
  async () => {
    await page.evaluate(`sessionStorage.setItem("pdu-bridge.apiKey", "assets-console-key-6b1d0e7f93a2")`);
    await page.goto(`${origin}/ui/#/assets/${assetId(10)}`);
    await page.locator(".asset-controls").waitFor({ timeout: 30_000 });
    assert.equal(await page.locator('.asset-controls [data-action="off"]').count(), 0, "protected: no Off");
    assert.equal(await page.locator('.asset-controls [data-action="reboot"]').count(), 1);
    await page.goto(`${origin}/ui/#/assets/${assetId(3)}`);
    const off = page.locator('.asset-controls [data-action="off"]');
    await off.waitFor({ timeout: 30_000 });
    const before = h.sims.a.journal().length + h.sims.b.journal().length;
    await off.click();
    await page.locator("dialog#confirm").waitFor();
    assert.match(
      (await page.locator("#confirm-text").textContent()) ?? "",
      /Switch off asset asset-0003: every cord, a-00 #4 live, b-00 #4 live/,
    );
    await page.locator('dialog#confirm button[value="confirm"]').click();
    await page.locator("main .note", { hasText: "done on every cord" }).waitFor({ timeout: 30_000 });
    assert.equal(h.sims.a.outlet(h.sims.a.deviceIds()[0]!, 3).state, "off");
    assert.equal(h.sims.b.outlet(h.sims.b.deviceIds()[0]!, 3).state, "off");
    assert.equal(h.sims.a.journal().length + h.sims.b.journal().length, before + 2, "one write per cord");
    const audit = h.audits().filter((l) => l.asset === assetId(3));
    assert.ok(audit.length >= 2, JSON.stringify(audit));
    await page.locator('.asset-controls [data-action="on"]').click();
    await page.locator('dialog#confirm button[value="confirm"]').click();
    await waitFor(() => h.sims.a.outlet(h.sims.a.deviceIds()[0]!, 3).state === "on", "on again", 30_000);
    await page.evaluate(`sessionStorage.removeItem("pdu-bridge.apiKey")`);
  },
);
