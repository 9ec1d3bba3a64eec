/**
 * Trap events in the console's "Recent events" panel, in a real browser (Debian chromium through
 * playwright-core) against the whole service with `Traps.Enabled`: an outlet switched at a
 * simulated APC unit's panel sends its trap, and the open console shows it live with its kind,
 * instance, outlet, the outlet's name from the trap and its time; a name that is markup is shown
 * as text (nothing of it runs or becomes an element); a console opened afterwards gets it among
 * the recent events on connect.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { freeUdpPort } from "../../testkit/traps.js";

const skip = chromiumMissing;
const COMMUNITY = "console-traps";
const KEY = "trap-events-key-0123456789abcdef";
const HOSTILE = `<img src=x onerror="window.pwned=1">web&01`;

let sim: SnmpSimulator;
let h: AppHarness<never>;
let browser: BrowserSession | undefined;
let page: Page;
let origin: string;

before(async () => {
  if (skip) return;
  const trapPort = await freeUdpPort();
  sim = await startSnmpSimulator({
    profile: "apc-rpdu2",
    port: 0,
    community: "lab",
    frozen: true,
    trapTo: { host: "127.0.0.1", port: trapPort, community: COMMUNITY },
  });
  h = await startAppHarness({
    yaml: () =>
      [
        "Mqtt:",
        "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
        "Pdus:",
        "  rack-a:",
        "    Driver: snmp",
        `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
        "    PollInterval: 30",
        `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: ${KEY} }`,
        `Traps: { Enabled: true, Port: ${trapPort} }`,
      ].join("\n"),
    env: { SERVICE_PDU_RACK_A_COMMUNITY: "lab", SERVICE_TRAP_COMMUNITIES: COMMUNITY },
    waitForFirstPolls: true,
  });
  origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
  browser = await openBrowser("trap-events", { width: 1280, height: 800 });
  ({ page } = browser);
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await h?.close();
  await sim?.close();
});

const trapEntries = () => page.locator(".panel.events li.ev-trap");

test(
  "a trap shows live in the recent events: kind, instance, outlet, the PDU's name for it as text, time",
  { skip },
  async () => {
    await page.goto(`${origin}/ui/`);
    await page.locator(".panel.events").waitFor({ timeout: 20_000 });
    await waitFor(
      async () => (await page.locator(".live").textContent()) === "Live",
      "the console's stream is live",
      20_000,
    );
    sim.unit.rename(3, HOSTILE);
    const before = Date.now();
    sim.panelSwitch(3, "off");
    await waitFor(async () => (await trapEntries().count()) === 1, "the trap's entry in the panel", 10_000);
    const entry = trapEntries().first();
    const text = (await entry.textContent()) ?? "";
    assert.match(
      text,
      /Trap: outlet switched, outlet 3 “<img src=x onerror="window\.pwned=1">web&01” off \(rPDUOutletOff\) on rack-a/,
    );
    assert.equal(await entry.locator("a").getAttribute("href"), "#/i/rack-a");
    // The label is text: no element of it, nothing of it ran.
    assert.equal(await page.locator(".panel.events img").count(), 0);
    assert.equal(await page.evaluate("window.pwned === undefined"), true);
    const datetime = Date.parse((await entry.locator("time").getAttribute("datetime")) ?? "");
    assert.ok(datetime >= before - 1000 && datetime <= Date.now(), `its time is the trap's (${datetime})`);
  },
);

test("a console opened after the trap gets it among the recent events on connect", { skip }, async () => {
  sim.panelSwitch(3, "on");
  await waitFor(async () => (await trapEntries().count()) === 2, "the second trap live", 10_000);
  await page.reload();
  await waitFor(async () => (await trapEntries().count()) === 2, "both traps after a reload", 20_000);
  const newest = (await trapEntries().first().textContent()) ?? "";
  assert.match(newest, /outlet 3 .* on \(rPDUOutletOn\) on rack-a/);
});
