/**
 * The fleet view at 1,000 instances, in a real browser against the whole service polling the
 * simulators (most instances share a few simulators: the view is what is under test, not the PDUs):
 * problems come first (offline, critical, warning, stale), the text filter and the state filters
 * narrow the list, the columns sort, only the rows on screen are in the page, scrolling brings the
 * others, and a PDU whose polls hang (no answer, no failure yet) shows as stale with its age.
 * axe-core checks the view; at 390 px it does not scroll sideways.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const skip = chromiumMissing;
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

type Sims = "normal" | "warm" | "hot" | "fading" | "dead" | "slow";
const INSTANCES = 1000;

/** Which simulator instance `pdu-NNNN` polls: a few problems among many healthy PDUs. */
function simOf(n: number): Sims {
  if (n === 17) return "slow";
  if ([101, 480, 902].includes(n)) return "hot";
  if ([50, 333, 600, 777, 950].includes(n)) return "warm";
  if ([250, 850].includes(n)) return "fading";
  if ([5, 999].includes(n)) return "dead";
  return "normal";
}
const id = (n: number) => `pdu-${String(n).padStart(4, "0")}`;

/**
 * A TCP proxy in front of a simulator that can stop passing requests on: polls through it then hang
 * (until their time-out) without failing, so the data ages while the PDU counts as online.
 */
async function holdingProxy(port: number): Promise<{ port: number; hold(): void; close(): Promise<void> }> {
  let holding = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => s.destroy());
    }
    client.on("data", (chunk) => {
      if (!holding) upstream.write(chunk);
    });
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  assert.ok(typeof address === "object" && address !== null);
  return {
    port: address.port,
    hold: () => {
      holding = true;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let h: AppHarness<Sims>;
let proxy: Awaited<ReturnType<typeof holdingProxy>> | undefined;
let browser: BrowserSession | undefined;
let page: Page;
let origin: string;

before(async () => {
  if (skip) return;
  h = await startAppHarness<Sims>({
    sims: {
      normal: { outlets: 2, seed: 31 },
      warm: { outlets: 2, seed: 32 },
      hot: { outlets: 2, seed: 33 },
      fading: { outlets: 2, seed: 34 },
      dead: { outlets: 2, seed: 35 },
      slow: { outlets: 2, seed: 36 },
    },
    beforeStart: async (sims) => {
      await sims.dead.close();
      proxy = await holdingProxy(sims.slow.port);
    },
    yaml: (sims) =>
      appYaml({
        pdus: Array.from({ length: INSTANCES }, (_, i) => {
          const n = i + 1;
          const sim = simOf(n);
          if (sim === "slow")
            return [
              `  ${id(n)}:`,
              `    Connection: { Host: "127.0.0.1", Port: ${proxy!.port}, Scheme: http, Timeout: 120 }`,
              "    PollInterval: 1",
              "    Ratings: { Breakers: 16, Phases: 32 }",
            ].join("\n");
          return [
            pduYaml(id(n), sims[sim], { pollInterval: sim === "normal" ? 20 : 2, timeout: 1 }),
            "    Ratings: { Breakers: 16, Phases: 32 }",
          ].join("\n");
        }),
        api: { key: "" },
        extra: "HomeAssistant: { DiscoveryEnabled: false }",
      }),
    captureLogs: false,
  });
  for (const deviceId of h.sims.hot.deviceIds()) {
    h.sims.hot.setEntityCurrent(deviceId, "breaker0", 15.5);
    h.sims.hot.setEntityCurrent(deviceId, "phase0", 28.8);
  }
  for (const deviceId of h.sims.warm.deviceIds()) h.sims.warm.setEntityCurrent(deviceId, "breaker1", 13.5);
  await waitFor(
    () => h.app.store.list().filter((s) => s.snapshot !== null).length >= INSTANCES - 2,
    "every instance polled once",
    // A deadline for a loaded machine (1,000 first polls beside other work), not a speed check.
    180_000,
  );
  await h.sims.fading.close();
  proxy!.hold();
  origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
  browser = await openBrowser("fleet-scale", { width: 1280, height: 800 });
  ({ page } = browser);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await h?.close();
  await proxy?.close();
});

/** The ids of the rows in the page, top to bottom. */
function rowIds(): Promise<string[]> {
  return page.evaluate<string[]>(
    `[...document.querySelectorAll(".fleet-table .rows [data-instance]")]
      .map((r) => ({ id: r.dataset.instance, top: r.getBoundingClientRect().top }))
      .sort((a, b) => a.top - b.top)
      .map((r) => r.id)`,
  );
}

const count = (filter: string) => page.locator(`.chip.f-${filter} .count`).textContent();

test("1,000 instances: problems first, only the rows on screen in the page", { skip }, async () => {
  await page.goto(`${origin}/ui/`);
  await waitFor(async () => (await count("all")) === String(INSTANCES), "every instance", 60_000);
  await waitFor(async () => (await count("offline")) === "4", "dead and fading offline", 90_000);
  assert.equal(await count("critical"), "3");
  assert.equal(await count("warning"), "5");
  const rows = await rowIds();
  assert.ok(rows.length < 60, `only the rows on screen are in the page (${rows.length})`);
  assert.deepEqual(rows.slice(0, 4).sort(), [id(5), id(250), id(850), id(999)], rows.slice(0, 12).join());
  assert.deepEqual(rows.slice(4, 7).sort(), [id(101), id(480), id(902)]);
  assert.deepEqual(rows.slice(7, 12).sort(), [id(50), id(333), id(600), id(777), id(950)]);
  assert.match((await page.locator(`[data-instance="${id(999)}"]`).textContent()) ?? "", /never polled/);
  assert.match((await page.locator(`[data-instance="${id(250)}"]`).textContent()) ?? "", /data \d+ s old/);
});

test("a PDU whose polls hang shows as stale, with the age of its data", { skip }, async () => {
  const slow = page.locator(`[data-instance="${id(17)}"]`);
  await waitFor(
    async () => (await count("stale")) === "1",
    "stale after three poll intervals (30 s)",
    60_000,
  );
  const rows = await rowIds();
  assert.equal(rows[12], id(17), "stale comes after offline, critical and warning");
  assert.match((await slow.textContent()) ?? "", /Stale.*no poll for \d+ s/);
  assert.match((await slow.getAttribute("class")) ?? "", /\bstale\b/);
});

test("the text filter and the state filters narrow the list", { skip }, async () => {
  await page.locator("#fleet-filter").fill("pdu-071");
  await waitFor(async () => (await rowIds()).length === 10, "pdu-0710 … pdu-0719", 5000);
  assert.deepEqual(
    (await rowIds()).sort(),
    Array.from({ length: 10 }, (_, i) => id(710 + i)),
  );
  assert.match(
    (await page.locator(".sr-only[aria-live]").textContent()) ?? "",
    /^10 of 1000 instances shown$/,
  );
  await page.locator("#fleet-filter").fill("no such pdu");
  await page.locator("main .note", { hasText: "No instance matches" }).waitFor();
  await page.locator("#fleet-filter").fill("");
  await page.locator(".chip.f-critical").click();
  await waitFor(async () => (await rowIds()).length === 3, "the critical ones", 5000);
  assert.deepEqual((await rowIds()).sort(), [id(101), id(480), id(902)]);
  await page.locator(".chip.f-problems").click();
  await waitFor(async () => (await rowIds()).length === 13, "every problem", 5000);
  await page.locator(".chip.f-all").click();
  await waitFor(async () => (await count("all")) === String(INSTANCES), "all again", 5000);
});

test("columns sort; scrolling brings the rows further down", { skip }, async () => {
  await page.locator("#problems-first").uncheck();
  await page.locator("button.sort[data-sort=instance]").click();
  await waitFor(async () => (await rowIds())[0] === id(1), "by instance", 5000);
  await page.locator("button.sort[data-sort=instance]").click();
  await waitFor(async () => (await rowIds())[0] === id(INSTANCES), "by instance, descending", 5000);
  assert.equal(
    await page.locator("[role=columnheader]:has(button[data-sort=instance])").getAttribute("aria-sort"),
    "descending",
  );
  await page.locator("button.sort[data-sort=load]").click();
  await waitFor(
    async () => [id(101), id(480), id(902)].includes((await rowIds())[0] ?? ""),
    "the most loaded first",
    5000,
  );
  await page.locator("button.sort[data-sort=instance]").click();
  await waitFor(async () => (await rowIds())[0] === id(1), "by instance again", 5000);
  await page.evaluate("window.scrollTo(0, document.body.scrollHeight)");
  await waitFor(async () => (await rowIds()).includes(id(INSTANCES)), "the last row after scrolling", 5000);
  const rows = await rowIds();
  assert.ok(rows.length < 60, `still only the rows on screen (${rows.length})`);
  await page.evaluate("window.scrollTo(0, 0)");
  await page.locator("#problems-first").check();
});

test("axe-core finds nothing serious; at 390 px the fleet does not scroll sideways", { skip }, async () => {
  await page.evaluate(AXE_SOURCE);
  const serious = await page.evaluate<{ id: string }[]>(
    `axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ id: v.id, help: v.help })))`,
  );
  assert.deepEqual(serious, []);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  assert.ok((await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth")) <= 0);
  assert.ok((await rowIds()).length > 0);
  const violations = await page.evaluate<string[]>("window.cspViolations");
  assert.deepEqual(violations, []);
});
