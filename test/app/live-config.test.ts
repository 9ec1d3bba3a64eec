/**
 * Configuration read one way: a live change (as the Kubernetes source hands it to App.applyLive)
 * reaches every part that reads the key, here the Retry-After that control answers for an instance
 * not polled yet (from its PollInterval), over REST and from the core itself.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { diffConfig } from "../../src/config/kubernetes/source.js";
import { parseConfigText } from "../../src/config/load.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";

const KEY = "live-config-key-5e02a7";

describe("a live PollInterval change", () => {
  let h: AppHarness<"hung">;
  const yaml = (pollInterval: number) =>
    appYaml({
      api: { key: KEY },
      pdus: [pduYaml("pending", h.sims.hung, { actionsEnabled: true, pollInterval, timeout: 0.5 })],
    });

  before(async () => {
    h = await startAppHarness<"hung">({
      sims: { hung: { outlets: 2 } },
      // Never answers, so the instance is never polled and control answers 503 with Retry-After.
      beforeStart: (s) => s.hung.setFault("hang"),
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [pduYaml("pending", s.hung, { actionsEnabled: true, pollInterval: 30, timeout: 0.5 })],
        }),
    });
  });

  after(async () => {
    await h?.sims.hung.setFault(null);
    await h?.close();
  });

  const retryAfter = async (): Promise<string | undefined> => {
    const device = h.sims.hung.deviceIds()[0]!;
    const r = await h.api.post(
      `/api/v1/instances/pending/outlets/${device}/0/control`,
      { action: "on" },
      { "x-api-key": KEY },
    );
    assert.equal(r.status, 503, r.text);
    return r.headers["retry-after"];
  };

  it("reaches control's Retry-After (REST and the core) without a restart", async () => {
    assert.equal(await retryAfter(), "30", "Retry-After is the PollInterval at start");

    const next = await parseConfigText(yaml(4), "live.yaml", {});
    const diff = diffConfig(h.app.config, next);
    assert.deepEqual(diff.restart, [], "PollInterval applies live");
    h.app.applyLive(next, diff.live);

    assert.equal(await retryAfter(), "4", "Retry-After follows the live PollInterval");
    const outcome = await h.app.control.execute({
      instanceId: "pending",
      target: { kind: "outlet", deviceId: h.sims.hung.deviceIds()[0]!, index: 0 },
      action: "on",
      source: { surface: "mqtt", topic: "test" },
    });
    assert.equal(outcome.ok, false);
    assert.equal(!outcome.ok && outcome.retryAfter, 4);
    assert.ok(h.logs().some((l) => l.msg === "configuration change applied"));
  });
});

describe("a live PollInterval change reaches the PDU driver", () => {
  let h: AppHarness<"unit">;
  const yaml = (pollInterval: number) => appYaml({ pdus: [pduYaml("unit", h.sims.unit, { pollInterval })] });

  before(async () => {
    h = await startAppHarness<"unit">({
      sims: { unit: { outlets: 2 } },
      yaml: (s) => appYaml({ pdus: [pduYaml("unit", s.unit, { pollInterval: 10 })] }),
    });
  });

  after(async () => {
    await h?.close();
  });

  const polls = () => h.sims.unit.requests.filter((r) => r.method === "GET" && r.path === "/api").length;
  /** Waits up to `ms` for `check`; false when it never held. */
  async function eventually(check: () => boolean, ms: number): Promise<boolean> {
    for (let waited = 0; waited < ms; waited += 20) {
      if (check()) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return check();
  }

  it("polls 10 s apart close their connection; 1 s apart keep it", async () => {
    assert.ok(await eventually(() => polls() >= 1, 15_000), "first poll");
    assert.ok(await eventually(() => h.sims.unit.openConnections === 0, 2000), "closed after the answer");

    const next = await parseConfigText(yaml(1), "live.yaml", {});
    h.app.applyLive(next, diffConfig(h.app.config, next).live);
    const seen = polls();
    assert.ok(await eventually(() => polls() >= seen + 2, 5000), "polled every second");
    // Kept: open all the time between polls, not only while one runs.
    for (let sample = 0; sample < 25; sample++) {
      assert.equal(h.sims.unit.openConnections, 1, "the read connection is kept between polls");
      await new Promise((r) => setTimeout(r, 20));
    }
  });
});
