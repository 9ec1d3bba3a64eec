/**
 * The web console and /health/integrations among replicas (docs/console.md, "Among several
 * replicas"; docs/cluster.md): two replicas as real processes on a real etcd and mosquitto, the
 * console of each in Chromium. Every PDU shows on each replica's fleet view, with its holder and
 * that replica's state; a PDU view of an instance held by the other replica shows its outlets; a
 * control done through one replica's console shows once in the events panel of both, whichever
 * replica carried it out; after `kill -9` of one, the other's `/health/integrations` names the
 * member that stopped renewing and the instances nobody polls, until it takes them over, and its
 * console never shows the dead replica's last state as current.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { bucketOf } from "../../src/cluster/assign.js";
import { chromiumMissing, openBrowser, type BrowserSession } from "../../testkit/browser.js";
import { FLEET_API_KEY, ReplicaFleet } from "../../testkit/replica-fleet.js";
import { waitFor } from "../../testkit/wait.js";

const BUCKETS = 4;
const NAMES = ["r1", "r2"] as const;

interface Row {
  readonly id: string;
  readonly badge: string;
  readonly detail: string;
  readonly power: string;
}

interface ClusterEntry {
  readonly status: string;
  readonly detail: string;
  readonly stoppedRenewing: { member: string; secondsAgo: number }[];
  readonly unpolled: { instance: string; holder: string | null }[];
}

/** The fleet view's rows as the page shows them. */
function rows(page: Page): Promise<Row[]> {
  return page.evaluate<Row[]>(`[...document.querySelectorAll(".fleet-table .rows .row")].map((row) => ({
    id: row.getAttribute("data-instance") ?? "",
    badge: row.querySelector(".badge")?.textContent ?? "",
    detail: row.querySelector(".detail")?.textContent ?? "",
    power: row.querySelector(".c-power")?.textContent ?? "",
  }))`);
}

/** The control entries of the events panel naming `instance`. */
async function controlEntries(page: Page, instance: string): Promise<string[]> {
  const entries = await page.locator(".panel.events li.ev-control").allTextContents();
  return entries.filter((text) => text.includes(` on ${instance}`));
}

describe("the console and health among two replicas", { timeout: 300_000, skip: chromiumMissing }, () => {
  let fleet: ReplicaFleet;
  let browser: BrowserSession;
  const pages = new Map<string, Page>();
  let holders: Map<number, string>;
  const holderOf = (id: string) => holders.get(bucketOf(id, BUCKETS))!;
  const heldBy = (member: string) => [...fleet.sims.keys()].filter((id) => holderOf(id) === member);
  const health = async (member: string): Promise<ClusterEntry> => {
    const response = await fetch(`http://127.0.0.1:${fleet.get(member).healthPort}/health/integrations`);
    const body = (await response.json()) as { integrations: { cluster: ClusterEntry } };
    return body.integrations.cluster;
  };

  before(async () => {
    if (chromiumMissing) return;
    fleet = await ReplicaFleet.start({
      instances: 6,
      buckets: BUCKETS,
      etcdMembers: 1,
      listeners: true,
      // After a kill: its instances named from about 4 s (RenewDeadline) until the takeover,
      // about 8 s (LeaseDuration) and a round after it.
      leaseDuration: 8,
      renewDeadline: 4,
      retryPeriod: 1,
    });
    await Promise.all(NAMES.map((n) => fleet.add(n)));
    ({ holders } = await fleet.steadyWindow([...NAMES]));
    browser = await openBrowser("console-replicas", { width: 1280, height: 900 });
    for (const name of NAMES) {
      const page = name === "r1" ? browser.page : await browser.context.newPage();
      // The API key, as the key dialog keeps it (this origin's session storage).
      await page.addInitScript({
        content: `sessionStorage.setItem("pdu-bridge.apiKey", ${JSON.stringify(FLEET_API_KEY)});`,
      });
      await page.goto(`${fleet.get(name).api!}/ui/`);
      pages.set(name, page);
    }
  });
  after(async () => {
    await browser?.close();
    await fleet?.close();
  });

  it("each replica's fleet view shows every PDU: its own with their state, the other's with their holder and the holder's state", async () => {
    assert.ok(heldBy("r1").length > 0 && heldBy("r2").length > 0, "both replicas hold instances");
    for (const name of NAMES) {
      const page = pages.get(name)!;
      const shown = await waitFor(
        async () => {
          const list = await rows(page);
          if (list.length !== fleet.sims.size) return undefined;
          const right = list.every((row) => {
            const holder = holderOf(row.id);
            if (row.badge !== "OK" || row.power === "–") return false;
            return holder === name
              ? !row.detail.includes("polled by")
              : row.detail.includes(`polled by replica ${holder}`);
          });
          return right ? list : undefined;
        },
        `replica ${name}'s fleet view: every PDU OK, the other's named with their holder`,
        30_000,
      );
      assert.deepEqual(shown.map((r) => r.id).sort(), [...fleet.sims.keys()].sort());
    }
  });

  it("a PDU view of an instance the other replica holds shows its outlets and its holder", async () => {
    const page = pages.get("r1")!;
    const id = heldBy("r2")[0]!;
    const deviceId = fleet.sims.get(id)!.deviceIds()[0]!;
    await page.goto(`${fleet.get("r1").api!}/ui/#/i/${id}`);
    await page.locator(`li[data-outlet="${deviceId}/0"]`).waitFor({ timeout: 20_000 });
    await page.locator(`li[data-outlet="${deviceId}/1"]`).waitFor();
    await waitFor(
      async () => /polled by replica r2/.test((await page.locator("p.meta").first().textContent()) ?? ""),
      "the header names the holder",
      10_000,
    );
    await page.goto(`${fleet.get("r1").api!}/ui/#/`);
  });

  it("a control done through one replica's console shows once in the events panel of both, with the replica that carried it out", async () => {
    const page = pages.get("r1")!;
    const own = heldBy("r1")[0]!;
    const other = heldBy("r2")[0]!;
    for (const [id, executor] of [
      [own, "r1"],
      [other, "r2"],
    ] as const) {
      const sim = fleet.sims.get(id)!;
      const deviceId = sim.deviceIds()[0]!;
      sim.setOutletState(deviceId, 1, "on");
      await page.goto(`${fleet.get("r1").api!}/ui/#/i/${id}`);
      const card = page.locator(`li[data-outlet="${deviceId}/1"]`);
      await waitFor(
        async () =>
          (await card.locator("button[data-action=off]").count()) === 1 &&
          !(await card.locator("button[data-action=off]").isDisabled()),
        `Off offered on ${id}`,
        20_000,
      );
      await card.locator("button[data-action=off]").click();
      await page.locator("dialog#confirm button[value=confirm]").click();
      await waitFor(() => sim.outlet(deviceId, 1).state === "off", `${id}'s outlet off`, 15_000);
      const writes = fleet.journal().filter((e) => e.instance === id && e.data.action === "off");
      assert.deepEqual(
        writes.map((e) => e.member),
        [executor],
        "carried out once, by the holder",
      );
      for (const name of NAMES) {
        const entries = await waitFor(
          async () => {
            const list = await controlEntries(pages.get(name)!, id);
            return list.length > 0 ? list : undefined;
          },
          `the control on ${id} in ${name}'s events panel`,
          20_000,
        );
        assert.match(entries[0]!, new RegExp(`switch off outlet 2 of .* on ${id} · by replica ${executor}`));
      }
    }
    // A few rounds later, still once each on both replicas (never shown twice).
    await new Promise((resolve) => setTimeout(resolve, 5000));
    for (const name of NAMES) {
      for (const id of [own, other])
        assert.equal((await controlEntries(pages.get(name)!, id)).length, 1, `${id} once on ${name}`);
    }
    await page.goto(`${fleet.get("r1").api!}/ui/#/`);
  });

  it("kill -9 of one: the other's health names the member that stopped renewing and its unpolled instances until it takes them over; its console never shows them as current meanwhile", async () => {
    const victims = heldBy("r2").sort();
    const page = pages.get("r1")!;
    await fleet.get("r2").process.kill();
    // The console says so from r1's first failed ask on (before its health names them), rather
    // than r2's last values: watched from the kill on, beside the health.
    const blanked = waitFor(
      async () => {
        const list = await rows(page);
        return victims.every((id) => {
          const row = list.find((r) => r.id === id);
          return (
            row !== undefined &&
            (row.badge === "Held elsewhere" || row.badge === "Not polled") &&
            row.power === "–"
          );
        });
      },
      "r1's fleet view: r2's instances without values, saying why",
      20_000,
      100,
    );
    const unpolled = waitFor(
      async () => {
        const entry = await health("r1");
        const named = entry.unpolled.map((u) => u.instance).sort();
        return JSON.stringify(named) === JSON.stringify(victims) ? entry : undefined;
      },
      "r1's health names r2's instances as polled by nobody",
      20_000,
      100,
    );
    const [during] = await Promise.all([unpolled, blanked]);
    assert.equal(during.status, "degraded");
    assert.ok(
      during.stoppedRenewing.some((m) => m.member === "r2"),
      JSON.stringify(during),
    );
    assert.match(during.detail, /member r2 stopped renewing \d+s ago/);
    for (const id of victims) assert.ok(during.detail.includes(id), during.detail);
    // Taken over: every instance polled again, none named any more, and in the end every bucket
    // (one without an instance may be taken a round after the others); the console shows them as r1's.
    await waitFor(
      async () => {
        const entry = await health("r1");
        return entry.unpolled.length === 0 &&
          entry.status === "healthy" &&
          /holds 4 of 4 buckets/.test(entry.detail)
          ? entry
          : undefined;
      },
      "r1 took r2's instances and buckets over",
      30_000,
    );
    await waitFor(
      async () => {
        const list = await rows(page);
        return (
          list.length === fleet.sims.size &&
          list.every((r) => r.badge === "OK" && !r.detail.includes("polled by"))
        );
      },
      "r1's fleet view: every PDU its own, OK",
      30_000,
    );
  });
});
