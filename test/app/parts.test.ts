/**
 * The composed App's parts and bus, through the real App: the parts in the documented order
 * (docs/architecture.md, "Parts"; test/docs/architecture.test.ts holds the rest of it), and a bus
 * listener that throws on every event taking down neither polling nor MQTT, and no part left
 * listening once the App has stopped.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { BUS_EVENT_NAMES } from "../../src/bus.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { REPO_ROOT } from "../../testkit/repo.js";
import { waitFor } from "../../testkit/wait.js";

const ARCHITECTURE = readFileSync(join(REPO_ROOT, "docs", "architecture.md"), "utf8");

/** The first cell of every row of the first markdown table after `heading`, backticks removed. */
function firstColumn(heading: string): string[] {
  const at = ARCHITECTURE.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `docs/architecture.md has ${heading}`);
  const lines = ARCHITECTURE.slice(at).split("\n");
  const first = lines.findIndex((line) => line.startsWith("|"));
  const end = lines.findIndex((line, i) => i > first && !line.startsWith("|"));
  return lines.slice(first + 2, end).map((row) => row.split("|")[1]!.trim().replaceAll("`", ""));
}

describe("the App's parts and bus", () => {
  let h: AppHarness<"lab">;

  before(async () => {
    h = await startAppHarness<"lab">({
      sims: { lab: { outlets: 2 } },
      yaml: (s) =>
        appYaml({
          pdus: [pduYaml("lab", s.lab, { pollInterval: 1 })],
          api: { key: "parts-test-key-0123456789abcdef" },
        }),
      waitForFirstPolls: true,
    });
  });

  after(async () => {
    await h?.close();
  });

  it("starts the parts in the documented order", () => {
    assert.deepEqual(h.app.parts, [
      "pdus",
      "energy",
      "webhooks",
      "instance-log",
      "assets",
      "metrics",
      "console",
      "api",
      "health",
      "credentials",
      "poller",
      "mqtt",
      "control",
    ]);
    // The trap receiver runs only with Traps.Enabled and an SNMP instance (test/traps/ starts it).
    const documented = firstColumn("### Parts").filter((name) => name !== "traps");
    assert.deepEqual(documented, h.app.parts, "docs/architecture.md lists them in start order");
  });

  it("publishes nothing under $assets or $feeds, and no asset device, without assets or feeds", async () => {
    await waitFor(
      () => h.mqtt.messages.some((m) => m.topic.startsWith(`${h.parent}/lab/`)),
      "the instance's topics (the connect's resync)",
    );
    // A poll later, whatever the assets part tells on the bus has been heard by MQTT.
    await h.waitForPoll("lab", Date.now() + 1);
    const assetTopics = h.mqtt.messages
      .map((m) => m.topic)
      .filter(
        (t) =>
          t.startsWith(`${h.parent}/$assets`) || t.startsWith(`${h.parent}/$feeds`) || t.includes("-assets/"),
      );
    assert.deepEqual(assetTopics, []);
  });

  it("a bus listener that throws takes down neither polling nor MQTT", async () => {
    const thrown = { count: 0 };
    const fail = (): never => {
      thrown.count++;
      throw new Error("a broken listener");
    };
    h.app.bus.listen(thrown, { snapshot: fail, pollFailed: fail, pollDone: fail, instanceStatus: fail });
    try {
      const since = Date.now();
      const seen = h.mqtt.messages.length;
      await h.waitForPoll("lab", since);
      await waitFor(() => thrown.count >= 2, "the broken listener called");
      await h.waitForPoll("lab", Date.now());
      assert.equal(h.app.store.get("lab")?.consecutiveFailures, 0, "every poll recorded as a success");
      await waitFor(
        () => h.mqtt.messages.slice(seen).some((m) => m.topic.startsWith(`${h.parent}/lab/`)),
        "values of the instance published after the listener broke",
      );
      assert.ok(
        h.logs().some((l) => l.level === "error" && typeof l.event === "string"),
        "the failure is logged",
      );
    } finally {
      h.app.bus.release(thrown);
    }
  });

  // Last: it stops the App.
  it("a stopped App's parts hear no event: the lifecycle released every listener", async () => {
    const counts = () => BUS_EVENT_NAMES.filter((name) => h.app.bus.listenerCount(name) > 0);
    assert.ok(counts().includes("snapshot"), "the parts listen while the App runs");
    await h.app.stop();
    assert.deepEqual(counts(), [], "events with a listener left after stop");
  });
});
