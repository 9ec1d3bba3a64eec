/**
 * The "reset energy statistics" command is offered only where the PDU can carry it out: the whole
 * service (embedded aedes broker, REST API, console) with a Geist simulator (can reset), the project's
 * SNMP simulator as an APC rPDU2 (its MIB has no per-outlet energy reset) and as a Raritan PX2 (has
 * one). Home Assistant discovery announces no reset button for the APC's outlets and one for every
 * outlet of the others; the console in Chromium shows none on the APC's outlets and one on the
 * Geist's; REST and MQTT resetStats to the APC are refused by the bridge (so titled), naming why,
 * and nothing is written to it.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { sleep } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";
import { startSnmpSimulator, type SnmpSimulator } from "../../src/simulator/snmp/agent.js";

const KEY = "reset-capability-test-key-0123456"; // 32 characters
const withKey = { "x-api-key": KEY };
const OUTLETS = 3;

/** The `Pdus` entry of an SNMP instance on the project's simulator (communities from the environment). */
const snmpPdu = (id: string, sim: SnmpSimulator) =>
  [
    `  ${id}:`,
    "    Driver: snmp",
    `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
    "    PollInterval: 1",
    "    ActionsEnabled: true",
  ].join("\n");

describe("resetStats follows what the PDU can do", () => {
  let apc: SnmpSimulator;
  let px2: SnmpSimulator;
  let h: AppHarness<"geist">;
  let browser: BrowserSession | undefined;

  const deviceOf = (id: string): string => {
    const d = h.app.store.get(id)?.snapshot?.devices[0]?.id;
    assert.ok(d !== undefined, `a device of ${id}`);
    return d;
  };

  before(async () => {
    const snmp = { community: "lab-read", writeCommunity: "lab-write", port: 0, outlets: OUTLETS };
    // Frozen: its energy stays as it is unless something resets it.
    apc = await startSnmpSimulator({ profile: "apc-rpdu2", ...snmp, frozen: true });
    px2 = await startSnmpSimulator({ profile: "raritan-px2", ...snmp });
    const env: Record<string, string> = {};
    for (const id of ["APC", "PX2"]) {
      env[`SERVICE_PDU_${id}_COMMUNITY`] = "lab-read";
      env[`SERVICE_PDU_${id}_WRITE_COMMUNITY`] = "lab-write";
    }
    h = await startAppHarness<"geist">({
      sims: { geist: { outlets: OUTLETS, seed: 7 } },
      yaml: (sims) =>
        appYaml({
          pdus: [
            pduYaml("geist", sims.geist, { actionsEnabled: true, pollInterval: 1 }),
            snmpPdu("apc", apc),
            snmpPdu("px2", px2),
          ],
          api: { key: KEY },
        }),
      env,
      waitForFirstPolls: true,
    });
  });
  after(async () => {
    await browser?.close();
    await h?.close();
    await px2?.close();
    await apc?.close();
  });

  it("discovery announces a reset button for every outlet of the Geist and the PX2, none for the APC rPDU2", async () => {
    const ha = await h.subscribe(["homeassistant/button/#"]);
    const buttons = (instance: string, objectId: string) =>
      [...ha.latest(`homeassistant/button/pdu-bridge_${instance}/`)]
        .filter(([t, m]) => t.endsWith(`_${objectId}/config`) && m.payload !== "")
        .map(([t]) => t);
    // Every instance's outlets are announced (the reboot buttons), so what is missing is left out.
    await waitFor(
      () => ["geist", "apc", "px2"].every((i) => buttons(i, "reboot").length === OUTLETS),
      "the reboot buttons of every instance",
      15_000,
    );
    // Each instance's configs go out as one batch: what is not there by now is not coming.
    await sleep(500);
    const apcDevice = deviceOf("apc");
    assert.deepEqual(buttons("apc", "reset-stats"), [], "no reset button for the APC rPDU2's outlets");
    assert.deepEqual(
      buttons("apc", "reboot").sort(),
      [0, 1, 2].map((i) => `homeassistant/button/pdu-bridge_apc/outlet_${apcDevice}_${i}_reboot/config`),
    );
    for (const instance of ["geist", "px2"]) {
      const device = deviceOf(instance);
      assert.deepEqual(
        buttons(instance, "reset-stats").sort(),
        [0, 1, 2].map(
          (i) => `homeassistant/button/pdu-bridge_${instance}/outlet_${device}_${i}_reset-stats/config`,
        ),
        instance,
      );
    }
  });

  it("REST and MQTT resetStats to the APC rPDU2 are refused naming why, and nothing is written to it", async () => {
    const device = deviceOf("apc");
    const energy = apc.unit.outlets[0]?.energyWh;
    const sets = apc.sets.length;
    const res = await h.api.post(
      `/api/v1/instances/apc/outlets/${device}/0/control`,
      { action: "resetStats" },
      withKey,
    );
    assert.equal(res.status, 409, res.text);
    assert.match(res.text, /cannot reset one outlet's statistics/);
    // The core refused it before sending anything, from the device's capability: the title says the
    // PDU cannot do it, not that the PDU refused it.
    assert.equal((JSON.parse(res.text) as { title: string }).title, "Not supported by the PDU");
    // The profile's reason: the MIB resets every outlet of the unit at once, never one.
    assert.match(res.text, /every outlet of the unit at once.*; nothing was sent/);
    await h.commandsReady("apc");
    const audit = await h.publishCommand(`${h.parent}/apc/${device}/outlets/0/resetStats`, "");
    assert.equal(audit.status, 409, JSON.stringify(audit));
    assert.match(String(audit.detail), /cannot reset one outlet's statistics/);
    assert.equal(apc.sets.length, sets, "no SET reached the agent");
    assert.equal(apc.unit.outlets[0]?.energyWh, energy);
  });

  it(
    "the console shows no reset button on the APC rPDU2's outlets and one on each Geist outlet",
    { skip: chromiumMissing },
    async () => {
      browser = await openBrowser("reset-capability", { width: 1280, height: 800 });
      const page: Page = browser.page;
      const origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
      await page.goto(`${origin}/ui/`);
      await page.evaluate(`sessionStorage.setItem("pdu-bridge.apiKey", ${JSON.stringify(KEY)})`);
      const actions = async (instance: string): Promise<string[][]> => {
        await page.goto(`${origin}/ui/#/i/${instance}`);
        await page.reload();
        const cards = page.locator("li[data-outlet]");
        await cards
          .nth(OUTLETS - 1)
          .locator("button[data-action=reboot]")
          .waitFor({ timeout: 20_000 });
        const out: string[][] = [];
        for (let i = 0; i < (await cards.count()); i++) {
          const buttons = cards.nth(i).locator("button[data-action]");
          const names: string[] = [];
          for (let b = 0; b < (await buttons.count()); b++)
            names.push((await buttons.nth(b).getAttribute("data-action")) ?? "");
          out.push(names);
        }
        return out;
      };
      const all = ["on", "off", "reboot", "resetStats"];
      assert.deepEqual(await actions("apc"), Array(OUTLETS).fill(["on", "off", "reboot"]));
      assert.deepEqual(await actions("geist"), Array(OUTLETS).fill(all));
      // The outlet view builds the same card.
      await page.goto(`${origin}/ui/#/i/apc/o/${deviceOf("apc")}/1`);
      await page.locator("li[data-outlet] button[data-action=reboot]").waitFor({ timeout: 20_000 });
      assert.equal(await page.locator("button[data-action=resetStats]").count(), 0);
    },
  );
});
