/**
 * The docs UI in a real browser (Debian chromium through playwright-core): every endpoint is
 * listed, "Try it out" → "Execute" on GET /api/v1/instances shows the live answer, and every request
 * the page makes goes to the service itself (no CDN, no fonts, no validator badge) without any
 * Content-Security-Policy violation.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { startApiServer } from "../../src/http/api/server.js";
import type { RunningListener } from "../../src/http/listener.js";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import { singleUnitTree } from "../../testkit/fixtures/geist-trees.js";
import { configFrom, harness } from "../../testkit/http-harness.js";

const skip = chromiumMissing;

const CONFIG = `
Pdus:
  rack-a:
    Connection: { Host: 192.0.2.10 }
  default:
    Connection: { Host: 192.0.2.20, Port: 443 }
Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: "docs-ui-test-key" }
`;

let api: RunningListener;
let page: Page;
let browser: BrowserSession | undefined;
let origin: string;
const requests = (): string[] => browser?.requests ?? [];

before(async () => {
  if (skip) return;
  const h = harness(await configFrom(CONFIG));
  h.store.recordSuccess("rack-a", parseApiTree(singleUnitTree(), "rack-a", h.clock.now));
  api = await startApiServer(h.deps);
  origin = `http://127.0.0.1:${api.port}`;
  browser = await openBrowser("docs-ui");
  ({ page } = browser);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await api?.close();
});

test(
  "the docs UI lists every endpoint, runs GET /api/v1/instances and stays on the service",
  { skip },
  async () => {
    await page.goto(`${origin}/docs/v1`);
    await page.locator(".opblock").first().waitFor({ timeout: 20_000 });

    const document = (await (await fetch(`${origin}/openapi/v1.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const expected = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    assert.ok(expected.length >= 6, "the document lists the endpoints");
    const listed = await page.evaluate<
      string[]
    >(`[...document.querySelectorAll(".opblock-summary")].map((n) =>
      n.querySelector(".opblock-summary-method").textContent.trim() + " " +
      n.querySelector(".opblock-summary-path").getAttribute("data-path"))`);
    assert.deepEqual([...listed].sort(), [...expected].sort());

    const operation = page.locator("#operations-Status-listInstances");
    await operation.locator(".opblock-summary").click();
    await operation.locator("button.try-out__btn").click();
    await operation.locator("button.execute").click();
    const status = operation.locator(".live-responses-table .response .response-col_status").first();
    await status.waitFor({ timeout: 20_000 });
    assert.equal((await status.textContent())?.trim().slice(0, 3), "200");
    const body =
      (await operation
        .locator(".live-responses-table .response-col_description pre")
        .first()
        .textContent()) ?? "";
    const shown = JSON.parse(body) as { id: string; host: string }[];
    assert.deepEqual(
      shown.map((i) => [i.id, i.host]),
      [
        ["rack-a", "192.0.2.10"],
        ["default", "192.0.2.20"],
      ],
    );

    assert.ok(
      requests().some((u) => u.startsWith(`${origin}/api/v1/instances`)),
      "Execute called the API",
    );
    // data: URLs (inline SVG icons) are not requests to anywhere; everything else must be the service.
    const outside = requests().filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("data:"));
    assert.deepEqual(outside, [], "every request of the page goes to the service's own origin");
    const violations = await page.evaluate<string[]>("window.cspViolations");
    assert.deepEqual(violations, [], "the Content-Security-Policy does not block anything the page needs");
  },
);
