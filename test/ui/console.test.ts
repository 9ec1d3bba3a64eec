/**
 * The web console in a real browser (Debian chromium through playwright-core) against the whole
 * service polling the simulator: the fleet view (problems first, a never-polled PDU says so), a PDU
 * view with totals on top and a bar per phase and breaker, an offline PDU shown stale with its age,
 * the groups and outlet views, the API key dialog (Enter saves; a wrong key is refused when saved),
 * the control buttons built from the command table ("On" disabled on an outlet that is on), the
 * confirmation naming the right outlet (the OneView master as the master), keyboard order starting
 * at the skip link, no request off the service and no CSP violation. axe-core checks every view
 * (no serious or critical violations); each view is checked at 1280 px and at 390 px for sideways
 * scrolling, with screenshots into artifacts/ui/ (git-ignored).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { REPO_ROOT } from "../../testkit/repo.js";
import { waitFor } from "../../testkit/wait.js";

const skip = chromiumMissing;

const KEY = "console-test-key-0123456789abcdef"; // 32 characters
const WRONG_KEY = "wrong-console-key-0123456789abcd"; // 32 characters
const ARTIFACTS = join(REPO_ROOT, "artifacts", "ui");
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

type Sims = "rack" | "solo" | "dead" | "fading";
let h: AppHarness<Sims>;
let page: Page;
let browser: BrowserSession | undefined;
let origin: string;
const requests = (): string[] => browser?.requests ?? [];

before(async () => {
  if (skip) return;
  h = await startAppHarness<Sims>({
    sims: {
      rack: { oneview: { members: 2 }, outlets: 6, seed: 3, stateLagMs: 1500 },
      solo: { outlets: 4, seed: 4 },
      dead: { seed: 5 },
      fading: { outlets: 2, seed: 6 },
    },
    // An instance whose PDU never answers: its simulator is gone before the bridge starts.
    beforeStart: (sims) => sims.dead.close(),
    yaml: (sims) =>
      appYaml({
        pdus: [
          pduYaml("rack", sims.rack, { actionsEnabled: true, pollInterval: 1 }),
          "    Ratings: { Breakers: 16, Phases: 32 }",
          // The last outlet of solo is hidden by the overrides.
          pduYaml("solo", sims.solo, { pollInterval: 1 }) +
            `\n    Overrides:\n      Outlets:\n        ${JSON.stringify(sims.solo.deviceIds()[0])}: { "3": { Hidden: true } }`,
          pduYaml("dead", sims.dead, { pollInterval: 1, timeout: 1 }),
          pduYaml("fading", sims.fading, { pollInterval: 1, timeout: 1 }),
        ],
        api: { key: KEY },
      }),
  });
  await h.waitForPoll("rack");
  await h.waitForPoll("solo");
  await h.waitForPoll("fading");
  // `fading` answers once, then no more: its values stay, stale.
  await h.sims.fading.close();
  origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
  await mkdir(ARTIFACTS, { recursive: true });
  browser = await openBrowser("console", { width: 1280, height: 800 });
  ({ page } = browser);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await h?.close();
});

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core in the page (evaluated through the debugger protocol: the page's CSP forbids inline scripts). */
async function axeCheck(view: string): Promise<void> {
  if (!(await page.evaluate("typeof window.axe !== 'undefined'"))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate<AxeViolation[]>(
    `axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) })))`,
  );
  const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(serious, [], `${view}: axe finds no serious or critical violations`);
}

/** At 1280×800 and 390×844 (a phone): no sideways scrolling of the page; screenshots of both. */
async function screenshots(name: string): Promise<void> {
  for (const [width, height] of [
    [1280, 800],
    [390, 844],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.waitForTimeout(200);
    const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
    assert.ok(overflow <= 0, `${name} at ${width} px: no horizontal scrolling of the page (${overflow} px)`);
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: false });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

const row = (id: string) => page.locator(`.fleet-table .rows [data-instance="${id}"]`);

/** The instance ids of the fleet's rows, top to bottom as they are shown. */
async function visibleOrder(): Promise<string[]> {
  return page.evaluate<string[]>(
    `[...document.querySelectorAll(".fleet-table .rows [data-instance]")]
      .map((r) => ({ id: r.dataset.instance, top: r.getBoundingClientRect().top }))
      .sort((a, b) => a.top - b.top)
      .map((r) => r.id)`,
  );
}

test("on load the skip link is the first Tab stop, and it moves to the content", { skip }, async () => {
  await page.goto(`${origin}/ui/`);
  await row("rack").waitFor({ timeout: 20_000 });
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate<string>("document.activeElement.className"), "skip");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate<string>("document.activeElement.id"), "main");
});

test(
  "the fleet view puts problems first; the never-polled PDU says so, the offline one is stale with its age; the most loaded breaker shows over a lighter phase",
  { skip },
  async () => {
    await page.goto(`${origin}/ui/`);
    await waitFor(async () => (await row("dead").textContent())?.includes("never polled"), "dead", 20_000);
    await waitFor(
      async () => (await row("fading").textContent())?.includes("Offline"),
      "fading offline",
      20_000,
    );
    const order = await visibleOrder();
    assert.deepEqual(order.slice(0, 2).sort(), ["dead", "fading"], `problems first: ${order.join(", ")}`);
    const fading = (await row("fading").textContent()) ?? "";
    assert.match(fading, /data \d+ s old/, "the stale values say how old they are");
    assert.match((await row("fading").getAttribute("class")) ?? "", /\bstale\b/);
    assert.match((await row("rack").textContent()) ?? "", /OK/);
    assert.match((await row("rack").textContent()) ?? "", /of (16|32) A/, "a load against its rating");
    // A breaker at 94 % of its 16 A while every phase carries far less of its 32 A: the breaker shows.
    const [first] = h.sims.rack.deviceIds();
    assert.ok(first !== undefined);
    h.sims.rack.setEntityCurrent(first, "breaker0", 15.04);
    await waitFor(
      async () => /15\.04 A of 16 A · 94 %/.test((await row("rack").textContent()) ?? ""),
      "the most loaded breaker against its rating, not a phase",
      10_000,
    );
    assert.match((await row("rack").locator(".bar").getAttribute("class")) ?? "", /\bwarning\b/);
    const error = h.app.store.get("dead")?.lastError ?? "";
    assert.ok(error !== "" && ((await row("dead").textContent()) ?? "").includes(error.slice(0, 20)));
    await axeCheck("fleet");
    await screenshots("fleet");
  },
);

test(
  "a PDU view: totals on top, a bar per phase and breaker against its rating, the simulator's labels and values",
  { skip },
  async () => {
    const sim = h.sims.rack;
    const [first, second] = sim.deviceIds();
    assert.ok(first !== undefined && second !== undefined);
    sim.setMeasurementRaw(first, 0, "realPower", "123.4");
    sim.setEnergy(first, 1, 42.5);
    sim.setEntityCurrent(first, "breaker0", 13.6);
    await h.waitForPoll("rack", Date.now());
    await page.goto(`${origin}/ui/#/i/rack`);
    const card = (deviceId: string, index: number) => page.locator(`li[data-outlet="${deviceId}/${index}"]`);
    await card(first, 0).waitFor({ timeout: 20_000 });
    await waitFor(
      async () => ((await card(first, 0).textContent()) ?? "").includes("123 W"),
      "pinned power",
      10_000,
    );
    await waitFor(
      async () => ((await card(first, 1).textContent()) ?? "").includes("42.50 kWh"),
      "energy",
      10_000,
    );
    const breaker = page.locator(`section:has(#device-${first}) li.load-row[data-entity=breaker0]`);
    await waitFor(
      async () => ((await breaker.textContent()) ?? "").includes("13.60 A of 16 A · 85 %"),
      "bar",
      10_000,
    );
    assert.match((await breaker.locator(".bar").getAttribute("class")) ?? "", /\bwarning\b/);
    assert.equal(await breaker.locator("[role=meter]").getAttribute("aria-valuenow"), "85");
    const totals = (await page.locator("dl.totals").textContent()) ?? "";
    assert.match(totals, /Power[\d,]+ W/);
    assert.match(totals, /Outlets on\d+ of 18/);
    const top = await page.locator("dl.totals").boundingBox();
    const devices = await page.locator("section.device").first().boundingBox();
    assert.ok(top && devices && top.y < devices.y, "totals above the devices");
    // The alarm of the breaker at 85 % is listed on the PDU.
    await waitFor(
      async () => ((await page.locator(".pdu-alarms").textContent()) ?? "").includes("breaker0"),
      "alarm",
      10_000,
    );
    for (const deviceId of [first, second]) {
      for (let index = 0; index < 6; index++) {
        const label = await card(deviceId, index).locator(".label").textContent();
        assert.equal(label, sim.outlet(deviceId, index).label || `Outlet ${index + 1}`);
      }
    }
    // Readable measurement names at one precision per unit.
    const table = (await page.locator("table.entities").first().textContent()) ?? "";
    assert.match(table, /Voltage \d+\.\d V/);
    assert.doesNotMatch(table, /apparentPower|realPower/);
    // Control is on for this instance, but only after the key is entered.
    assert.equal(await page.locator("button[data-action]").count(), 0);
    await axeCheck("pdu");
    await screenshots("pdu");
    sim.setEntityCurrent(first, "breaker0", null);
    await page.locator(".pdu-alarms").waitFor({ state: "hidden", timeout: 10_000 });

    // The layout does not change and the view does not grow while polls update it.
    const count = () =>
      page.evaluate<number>("document.getElementById('main').getElementsByTagName('*').length");
    const box = () => card(first, 2).boundingBox();
    const beforeCount = await count();
    const boxBefore = await box();
    await h.waitForPoll("rack", Date.now() + 2500, 20_000);
    assert.equal(await count(), beforeCount, "no element added by live updates");
    assert.deepEqual(await box(), boxBefore, "no layout jump");
  },
);

test(
  "an offline PDU: a banner with the error and the data's age, cards dimmed, badges neutral",
  { skip },
  async () => {
    await page.goto(`${origin}/ui/#/i/fading`);
    await page.locator("li[data-outlet]").first().waitFor({ timeout: 20_000 });
    const banner = (await page.locator("main .banner").first().textContent()) ?? "";
    assert.match(banner, /^Offline: .*Values below are from the last good poll, \d+ s ago\./);
    assert.match((await page.locator("main").getAttribute("class")) ?? "", /\bstale\b/);
    const style = await page.evaluate<string>(
      `getComputedStyle(document.querySelector("li[data-outlet] .badge")).borderStyle`,
    );
    assert.equal(style, "dashed", "a stale outlet's badge is neutral");
    await page.goto(`${origin}/ui/#/i/dead`);
    await waitFor(
      async () => /Never polled/.test((await page.locator("main").textContent()) ?? ""),
      "never",
      10_000,
    );
    assert.doesNotMatch((await page.locator("main").textContent()) ?? "", /last good poll,/);
    await axeCheck("offline");
    await screenshots("offline");
  },
);

test("an instance without ActionsEnabled shows no control, even with a key", { skip }, async () => {
  await page.evaluate(`sessionStorage.setItem("pdu-bridge.apiKey", ${JSON.stringify(KEY)})`);
  await page.goto(`${origin}/ui/#/i/solo`);
  await page.locator("li[data-outlet]").first().waitFor({ timeout: 20_000 });
  assert.equal(await page.locator("button[data-action]").count(), 0);
  assert.match((await page.locator("main").textContent()) ?? "", /ActionsEnabled: false/);
  await page.evaluate(`sessionStorage.clear()`);
});

test("an outlet hidden by the overrides is not shown, nor counted in the fleet view", { skip }, async () => {
  const deviceId = h.sims.solo.deviceIds()[0]!;
  await page.goto(`${origin}/ui/#/i/solo`);
  await page.locator(`li[data-outlet="${deviceId}/0"]`).waitFor({ timeout: 20_000 });
  const cards = page.locator("li[data-outlet]");
  const shown: (string | null)[] = [];
  for (let i = 0; i < (await cards.count()); i++) shown.push(await cards.nth(i).getAttribute("data-outlet"));
  assert.deepEqual(
    shown,
    [0, 1, 2].map((i) => `${deviceId}/${i}`),
    "outlet 3 is hidden",
  );
  const label = h.sims.solo.outlet(deviceId, 3).label;
  if (label !== "") assert.ok(!((await page.locator("main").textContent()) ?? "").includes(label));
  await page.goto(`${origin}/ui/`);
  const cells = page.locator('[data-instance="solo"] [role=cell]');
  await waitFor(async () => (await cells.allTextContents()).includes("3"), "solo counts 3 outlets", 20_000);
  assert.ok(!(await cells.allTextContents()).includes("4"));
});

test(
  "the groups view: the total group is every outlet, members as a table with state and power",
  { skip },
  async () => {
    await page.goto(`${origin}/ui/#/i/rack/groups`);
    await page.locator("section.group").first().waitFor({ timeout: 20_000 });
    const snapshot = h.app.store.get("rack")!.snapshot!;
    assert.equal(await page.locator("section.group").count(), snapshot.groups.length);
    const text = (await page.locator("main").textContent()) ?? "";
    for (const group of snapshot.groups) assert.ok(text.includes(group.displayName), group.displayName);
    const total = page.locator("section.group", { has: page.locator("h2 .sub", { hasText: /^total$/ }) });
    assert.match((await total.textContent()) ?? "", /Every outlet of the cluster \(18\)/);
    assert.doesNotMatch(text, /No member outlets/);
    assert.ok((await page.locator("table.members-table tbody tr").count()) > 0, "members listed");
    assert.ok((await page.locator("table.members-table a").count()) > 0, "members link to their outlets");
    // Numbers sit right, under right-aligned headers.
    assert.equal(
      await page.evaluate<string>(
        `getComputedStyle(document.querySelector("table.rollups thead th.n")).textAlign`,
      ),
      "right",
    );
    await axeCheck("groups");
    await screenshots("groups");
  },
);

test(
  "the outlet view: the chart spans the data it has and reads a value on hover; the title says the number once",
  { skip },
  async () => {
    const deviceId = h.sims.rack.deviceIds()[0]!;
    const index = h.sims.rack.outlet(deviceId, 2).label === "" ? 2 : 3;
    await page.goto(`${origin}/ui/#/i/rack/o/${deviceId}/${index}`);
    const line = page.locator("svg.chart path.line");
    await line.waitFor({ state: "attached", timeout: 20_000 });
    // Polled from here: a string predicate of waitForFunction is eval'd in the page, which the CSP
    // refuses. Once the history is in, the line starts at the left of the plot (the axis spans the
    // data it has), not squeezed at its right edge.
    await waitFor(
      async () => {
        const d = (await line.getAttribute("d")) ?? "";
        return d.split("L").length >= 3 && Number(/^M([\d.]+)/.exec(d)?.[1]) < 80;
      },
      "a line of the polls so far, from the left of the plot",
      20_000,
    );
    const h1 = (await page.locator("h1").textContent()) ?? "";
    assert.equal(h1, `Outlet ${index + 1}`, "no repetition of the default name");
    const box = await page.locator("svg.chart").boundingBox();
    assert.ok(box);
    await page.mouse.move(box.x + box.width - 20, box.y + box.height / 2);
    await waitFor(
      async () => /^\d\d:\d\d:\d\d · \d+ W$/.test((await page.locator(".chart-readout").textContent()) ?? ""),
      "the value under the pointer",
      5000,
    );
    assert.match((await page.locator("svg.chart").getAttribute("aria-label")) ?? "", /\d+ samples/);
    await axeCheck("outlet");
    await screenshots("outlet");
  },
);

test(
  "the key dialog: a wrong key is refused when saved, Enter saves the right one; the buttons come from the command table",
  { skip },
  async () => {
    await page.goto(`${origin}/ui/#/i/rack`);
    const deviceId = h.sims.rack.deviceIds()[0]!;
    const card = page.locator(`li[data-outlet="${deviceId}/4"]`);
    await card.waitFor({ timeout: 20_000 });
    await page.locator("header button.key-button").click();
    await page.locator("#key-input").fill(WRONG_KEY);
    await page.keyboard.press("Enter");
    await waitFor(
      async () => /not the service's API key/.test((await page.locator("#key-error").textContent()) ?? ""),
      "the refusal in the dialog",
      10_000,
    );
    assert.ok(await page.locator("dialog#key-dialog[open]").isVisible(), "the dialog stays open");
    assert.equal(await page.evaluate("sessionStorage.getItem('pdu-bridge.apiKey')"), null);
    await axeCheck("key dialog");
    await page.locator("#key-input").fill(KEY);
    await page.keyboard.press("Enter");
    await page.locator("dialog#key-dialog[open]").waitFor({ state: "detached" });
    await waitFor(
      async () => (await page.locator("header button.key-button").textContent()) === "Forget API key",
      "the key kept",
      5000,
    );
    await card.locator("button[data-action=off]").waitFor();
    const buttons = card.locator("button[data-action]");
    const seen: string[] = [];
    const classes = new Set<string>();
    for (let i = 0; i < (await buttons.count()); i++) {
      const button = buttons.nth(i);
      seen.push(`${await button.getAttribute("data-action")}:${await button.textContent()}`);
      classes.add((await button.getAttribute("class")) ?? "");
    }
    assert.deepEqual(seen, ["on:On", "off:Off", "reboot:Reboot", "resetStats:Reset energy"]);
    assert.equal(classes.size, 4, "each command looks different");
  },
);

test(
  "switching off: On is disabled on an outlet that is on; the confirmation names the outlet and the master unit; the PDU follows",
  { skip },
  async () => {
    const sim = h.sims.rack;
    const deviceId = sim.deviceIds()[0]!;
    const index = 4;
    const label = sim.outlet(deviceId, index).label || `Outlet ${index + 1}`;
    sim.setOutletState(deviceId, index, "on");
    await h.waitForPoll("rack", Date.now() + 2000);
    const card = page.locator(`li[data-outlet="${deviceId}/${index}"]`);
    await waitFor(
      async () => await card.locator("button[data-action=on]").isDisabled(),
      "On disabled",
      10_000,
    );
    assert.equal(await card.locator("button[data-action=off]").isDisabled(), false);

    await card.locator("button[data-action=off]").click();
    const dialog = page.locator("dialog#confirm");
    await dialog.waitFor();
    const question = (await dialog.textContent()) ?? "";
    assert.ok(question.includes("rack"), `names the PDU: ${question}`);
    assert.ok(question.includes(`outlet ${index + 1}`), `names the outlet number: ${question}`);
    assert.ok(question.includes(label), `names the label: ${question}`);
    assert.ok(question.includes(`(index ${index})`), question);
    assert.doesNotMatch(question, /member/, "the master is not called a member");
    assert.match(question, /master unit/);
    await axeCheck("confirmation");
    await dialog.locator("button[value=cancel]").click();
    assert.equal(sim.writes().length, 0, "cancelled: no write");

    const member = sim.deviceIds()[1]!;
    await page.locator(`li[data-outlet="${member}/0"] button[data-action=reboot]`).click();
    assert.match((await dialog.textContent()) ?? "", /member unit/);
    await dialog.locator("button[value=cancel]").click();

    await card.locator("button[data-action=off]").click();
    await dialog.locator("button[value=confirm]").click();
    // The PDU reports the new state 1.5 s late (stateLagMs): the page shows it pending until then.
    await waitFor(
      async () => /Switching off/.test((await card.locator(".badge").textContent()) ?? ""),
      "pending",
      10_000,
    );
    await waitFor(() => sim.outlet(deviceId, index).state === "off", "the simulator's outlet off", 10_000);
    await waitFor(
      async () => (await card.locator(".badge").textContent()) === "off",
      "the page shows off",
      15_000,
    );
    assert.match((await card.locator(".outlet-note").textContent()) ?? "", /reports off/);
    assert.equal(await card.locator("button[data-action=off]").isDisabled(), true, "Off disabled once off");
    assert.equal(await card.locator("button[data-action=on]").isDisabled(), false);
    await waitFor(
      async () => /switch off outlet 5 of/.test((await page.locator(".panel.events").textContent()) ?? ""),
      "the recent events list the action",
      10_000,
    );
    await screenshots("pdu-control");
  },
);

test(
  "keyboard: Enter opens the confirmation on Cancel, Escape closes it and sends nothing",
  { skip },
  async () => {
    const deviceId = h.sims.rack.deviceIds()[1]!;
    h.sims.rack.setOutletState(deviceId, 0, "on");
    const off = page.locator(`li[data-outlet="${deviceId}/0"] button[data-action=off]`);
    await off.waitFor({ timeout: 20_000 }); // the key from the previous test is still in the tab
    await waitFor(async () => !(await off.isDisabled()), "Off enabled", 10_000);
    const writes = h.sims.rack.writes().length;
    await off.focus();
    await page.keyboard.press("Enter");
    await page.locator("dialog#confirm[open]").waitFor();
    assert.equal(
      await page.evaluate<string>("document.activeElement.value"),
      "cancel",
      "Cancel has the focus",
    );
    await page.keyboard.press("Escape");
    await page.locator("dialog#confirm[open]").waitFor({ state: "detached" });
    assert.equal(
      await page.evaluate<string>("document.activeElement.dataset.action"),
      "off",
      "focus is back",
    );
    assert.equal(h.sims.rack.writes().length, writes, "nothing was sent");
  },
);

test("every request of the console goes to the service, without a CSP violation", { skip }, async () => {
  assert.ok(
    requests().some((u) => u.startsWith(`${origin}/api/v1/events`)),
    "the event stream was used",
  );
  assert.ok(
    requests().some((u) => u === `${origin}/api/v1/key`),
    "the key was checked",
  );
  const outside = requests().filter((u) => !u.startsWith(`${origin}/`) && u !== "about:blank");
  assert.deepEqual(outside, [], "no request leaves the service");
  // Sign-in is off here: no page asks who is signed in (it would get a 404 every time).
  assert.ok(
    requests().filter((u) => u.startsWith(`${origin}/ui/`)).length > 0,
    "the console's pages were loaded",
  );
  assert.deepEqual(
    requests().filter((u) => u.startsWith(`${origin}/ui/auth/`)),
    [],
    "no request to /ui/auth/ without sign-in",
  );
  const violations = await page.evaluate<string[]>("window.cspViolations");
  assert.deepEqual(violations, []);
});
