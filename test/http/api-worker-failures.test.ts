/**
 * No serialisation and no message between the threads of `Api.Worker` can end the process: a
 * snapshot whose readings cannot be serialised (here a measurement whose units throw when turned
 * into JSON, as an unbounded 6 MB device id would with `RangeError: Invalid string length`) is
 * answered 500 with a problem and a log line, on the worker's fast path and through fastify, while
 * the rest of the API keeps answering. In the test process itself, so that an exception thrown out
 * of the main thread's message handler (which would end the process) fails the test.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Measurement, Snapshot } from "../../src/pdu/model.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { singleUnit } from "../../testkit/snapshot-builders.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { waitFor } from "../../testkit/wait.js";

failOnUnhandled();

let h: AppHarness<"lab">;

before(async () => {
  h = await startAppHarness<"lab">({
    sims: { lab: { outlets: 3, seed: 81 } },
    yaml: (sims) =>
      appYaml({
        pdus: [pduYaml("lab", sims.lab, { pollInterval: 600 })],
        api: { key: "worker-failures-key-0123456789", worker: true },
        // Discovery would turn the units into JSON too: this test is about the REST API.
        extra: "HomeAssistant: { DiscoveryEnabled: false }",
      }),
    waitForFirstPolls: true,
  });
});

after(async () => {
  await h?.close();
});

/** A snapshot of `lab` whose readings throw when serialised. */
function unserialisable(): Snapshot {
  const s = singleUnit("lab", "UNSERIALISABLE", 2);
  const units = {
    toJSON() {
      throw new RangeError("Invalid string length");
    },
  } as unknown as string;
  const device = s.devices[0]!;
  const outlets = device.outlets.map((o) => ({
    ...o,
    measurements: o.measurements.map((m): Measurement => ({ ...m, units })),
  }));
  return { ...s, devices: [{ ...device, outlets }] };
}

test(
  "readings that cannot be serialised are a 500 problem and a log line, never the end of the process",
  { timeout: 60_000 },
  async () => {
    h.app.store.recordSuccess("lab", unserialisable());
    for (const [path, headers] of [
      ["/api/v1/readings?instance=lab", {}],
      ["/api/v1/readings", {}],
      // Not plain (a body length): fastify's route, on the main thread.
      ["/api/v1/readings?instance=lab", { "content-length": "0" }],
    ] as const) {
      const answer = await h.api.get(path, headers);
      assert.equal(answer.status, 500, `${path}: ${answer.text}`);
      assert.match(String(answer.headers["content-type"]), /^application\/problem\+json/);
      assert.doesNotMatch(answer.text, /Invalid string length|toJSON|\n\s+at /);
    }
    assert.ok(
      h.logs().some((l) => l.level === "error" && l.msg === "request failed"),
      "the failure is logged",
    );
    // Everything else answers, and the worker is the same one.
    const thread = h.app.apiWorker!.thread();
    assert.equal((await h.api.get("/api/v1/health")).status, 200);
    assert.equal((await h.api.get("/api/v1/instances")).status, 200);
    assert.equal(h.app.apiWorker!.thread(), thread);
    assert.equal(h.app.apiWorker!.outage(), null);

    // A snapshot that serialises again is answered again.
    h.app.store.recordSuccess("lab", singleUnit("lab", "FINE", 2));
    const back = await waitFor(async () => {
      const r = await h.api.get("/api/v1/readings?instance=lab");
      return r.status === 200 && r;
    }, "the readings of the next snapshot");
    assert.match(back.text, /"deviceId":"FINE"/);
  },
);
