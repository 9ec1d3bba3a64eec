/**
 * PDU-supplied names and writes (docs/reliability.md, "PDU-supplied names and writes"), against the
 * real service (App) connected to a spawned mosquitto, which, unlike aedes, drops a client that
 * publishes a topic with a control character or a noncharacter in it:
 *
 * - property (fast-check): a hostile PDU serves trees whose device ids, outlet and entity keys,
 *   labels and measurement types are drawn from all of Unicode and from edge lengths (0, 128, 129,
 *   65,536 bytes); after each, the bridge has not exited, has not reconnected, is READY, and a
 *   healthy PDU beside it is still polled and still executes commands sent over MQTT;
 * - flood: 50 MQTT `reboot` commands for one outlet within a second reach the PDU as one reboot
 *   write; the other 49 are refused (409) and audited;
 * - a PDU that closes the socket after reading a reboot's body gets exactly one POST, and the REST
 *   answer says the outcome is unknown (502, no Retry-After);
 * - device ids `.` and `..` are never written to (no write reaches any path of the PDU).
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { request } from "undici";
import { App } from "../../src/app.js";
import { parseConfigText } from "../../src/config/load.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { HostilePdu, unitTree } from "../../testkit/hostile-pdu.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { openTestConnection } from "../../testkit/mqtt-config.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { waitFor } from "../../testkit/wait.js";

failOnUnhandled();

const P = "hostile-names";
const KEY = "hostile-names-api-key-0123456789";
const RUNS = 30;

describe("PDU-supplied names and writes, with a spawned mosquitto", () => {
  let broker: Mosquitto;
  let pdu: HostilePdu;
  let sim: Simulator;
  let app: App;
  let log: LogCapture;
  let commander: Recorder;
  let good: string;

  const connects = () => log.raw.filter((l) => l.includes('"msg":"connected to MQTT broker"')).length;
  const losses = () => log.raw.filter((l) => l.includes("MQTT connection lost")).length;
  const health = (path: string) =>
    request(`http://127.0.0.1:${app.endpoints.healthPort}${path}`).then(async (r) => ({
      status: r.statusCode,
      text: await r.body.text(),
    }));
  const rest = async (path: string, body: unknown) => {
    const r = await request(`http://127.0.0.1:${app.endpoints.apiPort}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": KEY },
      body: JSON.stringify(body),
    });
    return {
      status: r.statusCode,
      headers: r.headers,
      json: (await r.body.json()) as Record<string, unknown>,
    };
  };
  /** A POST whose path is sent exactly as given (undici's URL parsing would drop `%2E` segments). */
  const rawPost = (path: string, body: unknown) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = httpRequest(
        {
          host: "127.0.0.1",
          port: app.endpoints.apiPort ?? 0,
          method: "POST",
          path,
          headers: {
            "content-type": "application/json",
            "x-api-key": KEY,
            "content-length": Buffer.byteLength(payload),
          },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  /** Polls the hostile PDU now and waits until that poll has been handled. */
  const pollBad = async () => {
    const before = app.store.get("bad")?.lastPollUtc ?? 0;
    app.poller.pollSoon("bad", 0);
    await waitFor(
      () => (app.store.get("bad")?.lastPollUtc ?? 0) > before,
      "a poll of the hostile PDU",
      10_000,
    );
  };

  before(async () => {
    broker = await Mosquitto.start();
    pdu = await HostilePdu.start();
    pdu.tree = unitTree("HOSTILE0000000001");
    sim = await startSimulator({ outlets: 8, requestLogLimit: 100_000 });
    good = sim.deviceIds()[0] ?? "";
    const yaml = [
      "Mqtt:",
      `  Connection: { Host: ${broker.host}, Port: ${broker.port}, Scheme: mqtt }`,
      `  ParentTopic: ${P}`,
      "Pdus:",
      "  good:",
      `    Connection: { Host: ${sim.host}, Port: ${sim.port}, Scheme: http, Timeout: 5 }`,
      "    Credentials: { Username: admin, Password: admin }",
      "    PollInterval: 1",
      "    ActionsEnabled: true",
      // The property switches outlet 7 on and off once per run (test/app/relay-protection.test.ts).
      "    RelayProtection: 0",
      "  bad:",
      `    Connection: { Host: ${pdu.host}, Port: ${pdu.port}, Scheme: http, Timeout: 5 }`,
      "    Credentials: { Username: admin, Password: admin }",
      "    PollInterval: 3600",
      "    ActionsEnabled: true",
      `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: ${KEY} }`,
      "Health: { Enabled: true, Bind: 127.0.0.1, Port: 0 }",
      "",
    ].join("\n");
    const config = await parseConfigText(yaml, "hostile-names.yaml", {});
    log = new LogCapture();
    app = await App.start(config, { logger: log.logger });
    await waitFor(
      () => app.store.get("good")?.snapshot && app.store.get("bad")?.snapshot,
      "first polls",
      15_000,
    );
    commander = await Recorder.connect(broker, [`${P}/good/#`]);
    await waitFor(async () => (await health("/readyz")).status === 200, "READY", 15_000);
  });
  after(async () => {
    await commander?.close();
    await app?.stop();
    await sim?.close();
    await pdu?.close();
    await broker?.close();
  });

  it("property: hostile names never cost the connection, readiness or the healthy PDU", async (t) => {
    const edge = fc.constantFrom(
      "",
      ".",
      "..",
      "x".repeat(128),
      "x".repeat(129),
      "é".repeat(64),
      "é".repeat(65),
      "y".repeat(65_536),
      "a/b",
      "+",
      "#",
      "\u0000",
      "\u0001",
      "\u001f",
      "\u007f",
      "\u0085",
      "\ufffe",
      "\uffff",
      "\ud800",
      "\udfff",
      "\ufdd0",
      "\u{10ffff}",
    );
    const name = fc.oneof(
      { weight: 4, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
      { weight: 3, arbitrary: edge },
      { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 120, maxLength: 140 }) },
      {
        weight: 1,
        arbitrary: fc.tuple(edge, fc.string({ unit: "binary", maxLength: 4 })).map(([a, b]) => a + b),
      },
    );
    const measurements = fc
      .array(fc.record({ type: name, value: fc.constantFrom("1", "2.5", "x"), units: name }), {
        maxLength: 2,
      })
      .map((ms) => Object.fromEntries(ms.map((m, i) => [String(i), m])));
    const outletKey = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom("0", "1", "2") },
      { weight: 1, arbitrary: name },
    );
    const outlet = fc.record({
      name,
      label: name,
      state: fc.constantFrom("on", "off"),
      measurement: measurements,
    });
    const entity = fc.record({ name, label: name, measurement: measurements });
    const device = fc.record({
      name,
      label: name,
      state: name,
      outlet: fc.dictionary(outletKey, outlet, { maxKeys: 3 }),
      entity: fc.dictionary(name, entity, { maxKeys: 2 }),
    });
    const tree = fc.record({
      sys: fc.record({ model: name, label: name }),
      dev: fc.dictionary(name, device, { minKeys: 1, maxKeys: 3 }),
    });

    let run = 0;
    await fc.assert(
      fc.asyncProperty(tree, async (generated) => {
        run++;
        pdu.tree = generated;
        await pollBad();
        // The healthy PDU still executes a command sent over MQTT (and so the bridge still reads MQTT).
        const state = run % 2 === 0 ? "on" : "off";
        const audits = log.audits.length;
        await commander.client.publishAsync(`${P}/good/${good}/outlets/7/set`, state, { qos: 1 });
        await log.waitForAudits(audits + 1, "the audit of the healthy PDU's command", 10_000);
        const audit = log.audits.at(-1);
        assert.equal(audit?.status, 200, JSON.stringify(audit));
        assert.equal(sim.outlet(good, 7).state, state);
        // Never reconnected, still READY.
        assert.equal(losses(), 0, "the bridge never lost its MQTT connection");
        assert.equal(connects(), 1, "the bridge connected once");
        const ready = await health("/readyz");
        assert.equal(ready.status, 200, ready.text);
        // REST readings may still show the names: valid JSON, whatever they contain.
        const readings = await request(
          `http://127.0.0.1:${app.endpoints.apiPort}/api/v1/readings?instance=bad`,
        );
        assert.equal(readings.statusCode, 200);
        assert.ok(Array.isArray(JSON.parse(await readings.body.text())));
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    // The healthy PDU kept being polled throughout.
    const lastGood = app.store.get("good")?.lastSuccessUtc ?? 0;
    assert.ok(Date.now() - lastGood < 5000, "the healthy PDU was polled within the last seconds");
    assert.doesNotMatch(broker.output, /malformed|protocol error/i, "mosquitto saw nothing malformed");
    const skipped = log.raw.filter((l) => l.includes("cannot be part of an MQTT topic")).length;
    t.diagnostic(`${RUNS} trees; ${skipped} unsafe-name warnings logged (rate-limited)`);
  });

  it("every single publish is guarded: an unsendable message is dropped and counted, the connection stays", async () => {
    const capture = new LogCapture();
    const connection = await openTestConnection(
      broker,
      { clientId: "hostile-names-guard", parentTopic: "guard" },
      { logger: capture.logger },
    );
    const watcher = await Recorder.connect(broker, ["guard/#"]);
    try {
      await waitFor(() => connection.connected, "the connection");
      const bad = [
        `guard/${"x".repeat(70_000)}`,
        "guard/a\u0001b",
        "guard/\u0085",
        "guard/\uffff",
        "guard/\ud800",
        "guard/+",
        "",
      ];
      for (const [i, topic] of bad.entries()) {
        assert.equal(
          connection.publish(topic, "v", (i % 2) as 0 | 1, false),
          false,
          JSON.stringify(topic.slice(0, 20)),
        );
      }
      assert.equal(connection.droppedPublishes, bad.length);
      assert.equal(connection.status().droppedMessages, bad.length);
      assert.ok(capture.lines.some((l) => l.msg === "MQTT message dropped: it cannot be published"));
      assert.ok(connection.publish("guard/ok", "still here", 1, false));
      await watcher.waitFor("guard/ok");
      assert.ok(connection.connected, "never dropped by mosquitto");
    } finally {
      await watcher.close();
      await connection.close();
    }
  });

  it("flood: 50 MQTT reboots of one outlet within a second reach the PDU as one write", async () => {
    const topic = `${P}/good/${good}/outlets/5/reboot`;
    const path = `/api/dev/${good}/outlet/5`;
    const writes = () => sim.writes().filter((w) => w.path === path).length;
    const before = writes();
    const audits = log.audits.length;
    await Promise.all(
      Array.from({ length: 50 }, () => commander.client.publishAsync(topic, "reboot", { qos: 1 })),
    );
    // Every command is audited: a line each, or counted in the line that folds a burst of them
    // (written when the burst's 10 s window ends).
    const mine = () => log.audits.slice(audits).filter((a) => a.topic === topic);
    const counted = () => mine().reduce((n, a) => n + (typeof a.folded === "number" ? a.folded : 1), 0);
    await waitFor(() => counted() === 50, "50 commands audited", 20_000);
    assert.equal(writes() - before, 1, "one reboot write reached the PDU");
    assert.equal(mine().filter((a) => a.status === 200).length, 1);
    const refused = mine().filter((a) => a.status === 409);
    assert.ok(refused.length < 49, `the burst's refusals are folded (${refused.length} lines)`);
    for (const a of refused) {
      assert.equal(a.problem, "outlet-busy");
      assert.equal(a.outcome, "refused");
    }
  });

  it("a PDU that closes the socket after a reboot's body: one POST, and the answer says outcome unknown", async () => {
    pdu.tree = unitTree("HOSTILE0000000001");
    await pollBad();
    pdu.writes = "close-after-body";
    try {
      const before = pdu.writesSeen().length;
      const r = await rest("/api/v1/instances/bad/outlets/HOSTILE0000000001/1/control", { action: "reboot" });
      assert.equal(r.status, 502, JSON.stringify(r.json));
      assert.equal(r.json.type, "tag:pdu-bridge,2025:problem:outcome-unknown");
      assert.match(String(r.json.detail), /check the outlet before retrying/i);
      assert.equal(r.headers["retry-after"], undefined);
      assert.equal(pdu.writesSeen().length - before, 1, "exactly one POST reached the PDU");
      const audit = log.audits.at(-1);
      assert.equal(audit?.problem, "outcome-unknown");
    } finally {
      pdu.writes = "ok";
    }
  });

  it("device ids `.` and `..`: never controlled, nothing reaches the PDU", async () => {
    pdu.tree = { dev: { ...(unitTree(".").dev as object), ...(unitTree("..").dev as object) } };
    await pollBad();
    assert.deepEqual(
      app.store.get("bad")?.snapshot?.devices.map((d) => d.id),
      [".", ".."],
      "REST readings may still show them",
    );
    const before = pdu.requests.filter((r) => r.method === "POST").length;
    for (const id of ["%2E", "%2E%2E", "%2e%2e"]) {
      const r = await rawPost(`/api/v1/instances/bad/outlets/${id}/0/control`, { action: "off" });
      assert.equal(r.status, 400, r.text);
      assert.match(r.text, /unsafe|invalid/i);
    }
    assert.equal(pdu.requests.filter((r) => r.method === "POST").length, before, "no POST at all");
  });
});
