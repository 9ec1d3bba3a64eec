/**
 * The console's power history (src/ui/history.ts) is bounded per instance and forgets devices that
 * are gone. A PDU answering thousands of outlets under new device ids on every poll (the simulator's
 * `outlets:<n>` and `new-id` modes) would otherwise add a ring per outlet per poll, each kept for an
 * hour, and a renamed or vanished device's history must no longer be served. Against the real
 * service (App, embedded broker) and on the class itself.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Snapshot } from "../../src/pdu/model.js";
import { HISTORY_WINDOW_MS, MAX_HISTORY_SERIES, PowerHistory } from "../../src/ui/history.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { device, outlet, snapshot } from "../../testkit/snapshot-builders.js";

const INTERVAL_S = 10;
/** Samples per outlet at a 10 s interval: an hour and one. */
const CAPACITY = HISTORY_WINDOW_MS / 1000 / INTERVAL_S + 1;

describe("the power history of a PDU renaming thousands of outlets on every poll", () => {
  let h: AppHarness<"bad">;

  before(async () => {
    h = await startAppHarness<"bad">({
      sims: { bad: { devices: 16, outlets: 8, seed: 77 } },
      yaml: (sims) =>
        appYaml({
          pdus: [pduYaml("bad", sims.bad, { pollInterval: INTERVAL_S })],
          api: { key: "history-bounds-key-0123456789" },
          extra: "HomeAssistant: { DiscoveryEnabled: false }",
        }),
      captureLogs: false,
      subscribeAll: false,
      waitForFirstPolls: true,
    });
  });

  after(async () => {
    await h?.close();
  });

  const pollNow = async () => {
    const before = h.app.store.get("bad")?.lastSuccessUtc ?? 0;
    h.app.poller.pollSoon("bad", 0);
    await h.waitForPoll("bad", before + 1, 30_000);
  };

  it("keeps one ring per outlet of the latest answer, and no history of devices that are gone", async () => {
    const history = h.app.console!.history;
    const realIds = h.sims.bad.deviceIds();
    assert.ok(
      history.query("bad", realIds[0]!, 0, Date.now()) !== null,
      "the first poll's outlets have a history",
    );
    // 16 devices x 250 outlets = 4000 outlets under new ids on every answer (within the bounds).
    await h.sims.bad.setFault(["outlets:250", "new-id"]);
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) {
      await pollNow();
      const ids = h.app.store.get("bad")!.snapshot!.devices.map((d) => d.id);
      assert.equal(ids.length, 16);
      seen.push(ids[0]!);
    }
    const ringBytes = CAPACITY * 4;
    const series = (history.bytes() - CAPACITY * 8) / ringBytes;
    assert.ok(series <= 4000, `${series} outlet rings kept (6 polls of 4000 renamed outlets)`);
    const now = Date.now();
    // The renamed devices' history is gone; the latest answer's is there.
    for (const id of [realIds[0]!, ...seen.slice(0, -1)])
      assert.equal(history.query("bad", id, 0, now), null, `history of ${id}`);
    assert.notEqual(history.query("bad", seen.at(-1)!, 249, now), null);
    const gone = await h.api.get(`/api/v1/instances/bad/outlets/${encodeURIComponent(seen[0]!)}/0/history`);
    assert.equal(gone.status, 404, gone.text);
    const current = await h.api.get(
      `/api/v1/instances/bad/outlets/${encodeURIComponent(seen.at(-1)!)}/0/history`,
    );
    assert.equal(current.status, 200, current.text);
  });
});

describe("PowerHistory bounds", () => {
  const t0 = 1_700_000_000_000;
  const at = (i: number) => t0 + i * INTERVAL_S * 1000;

  it("drops a device's history as soon as a poll no longer has the device", () => {
    const history = new PowerHistory(() => INTERVAL_S);
    const two = (i: number): Snapshot =>
      snapshot(
        "rack",
        [device({ id: "A", outlets: [outlet(0)] }), device({ id: "B", outlets: [outlet(0)] })],
        [],
        at(i),
      );
    history.record(two(0));
    history.record(two(1));
    history.record(snapshot("rack", [device({ id: "A", outlets: [outlet(0)] })], [], at(2)));
    assert.equal(history.query("rack", "B", 0, at(2)), null, "B is gone");
    assert.deepEqual(history.query("rack", "A", 0, at(2))?.values, [58, 58, 58]);
    // An outlet missing from one answer of a device still there keeps its history (null there).
    history.record(snapshot("rack", [device({ id: "A", outlets: [outlet(1)] })], [], at(3)));
    assert.deepEqual(history.query("rack", "A", 0, at(3))?.values, [58, 58, 58, null]);
  });

  it(`keeps at most ${MAX_HISTORY_SERIES} rings per instance, the outlets seen last first`, () => {
    const history = new PowerHistory(() => INTERVAL_S);
    // One device whose outlet indexes move on every poll: the device stays, its outlets do not.
    for (let i = 0; i < 6; i++) {
      const outlets = Array.from({ length: 2000 }, (_, k) => outlet(i * 2000 + k));
      history.record(snapshot("rack", [device({ id: "A", outlets })], [], at(i)));
      const rings = (history.bytes() - CAPACITY * 8) / (CAPACITY * 4);
      assert.ok(rings <= MAX_HISTORY_SERIES, `${rings} rings after poll ${i}`);
    }
    assert.notEqual(history.query("rack", "A", 5 * 2000 + 1999, at(5)), null, "the latest outlets are kept");
    assert.equal(history.query("rack", "A", 0, at(5)), null, "the oldest are dropped first");
  });
});
