/**
 * One rule for display text (src/pdu/display.ts), for what the bridge shows as for what it writes:
 * a PDU whose names and labels carry right-to-left overrides, bidirectional isolates and marks,
 * line separators and control characters reaches no surface with them (Home Assistant discovery
 * names and the retained label topics over MQTT, metrics labels, REST readings, the console's event
 * stream): such a text is read as blank and the display name falls back (label, name, then
 * `Outlet <n>`), with a warning; and the same label written through the bridge is refused.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, it } from "node:test";
import { HostilePdu, unitTree } from "../../testkit/hostile-pdu.js";
import { startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "hostile-labels-key-3b9e71";
const DEVICE = "HOSTILELABEL0001";

/** The characters the rule refuses, one per label. */
const HOSTILE = [
  "web-\u202e10", // right-to-left override: shows "web-01"
  "\u2066db\u2069", // isolates
  "mark\u200f", // right-to-left mark
  "line\u2028break", // line separator
  "bell\u0007", // a control character
  "del\u007f", // DEL
];
// eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
const BAD = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

/** Every string in a parsed JSON value. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      strings(v, out);
    }
  }
  return out;
}

const assertClean = (where: string, texts: readonly string[]) => {
  const dirty = texts.filter((t) => BAD.test(t));
  assert.deepEqual(
    dirty.map((t) => JSON.stringify(t)),
    [],
    `${where} shows a refused character`,
  );
};

/** The first `snapshot` frame of instance `bad` on the console's event stream. */
function consoleSnapshot(port: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/api/v1/events" }, (res) => {
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        for (const frame of buffer.split("\n\n")) {
          if (!frame.startsWith("event: snapshot")) continue;
          const data = frame
            .split("\n")
            .filter((l) => l.startsWith("data: "))
            .map((l) => l.slice(6))
            .join("\n");
          const parsed = JSON.parse(data) as { instanceId?: string };
          if (parsed.instanceId !== "bad") continue;
          req.destroy();
          resolve(parsed);
          return;
        }
      });
    });
    req.on("error", reject);
    req.setTimeout(15_000, () => req.destroy(new Error("no snapshot event")));
    req.end();
  });
}

describe("one rule for display text, shown and written", () => {
  let pdu: HostilePdu;
  let h: AppHarness<never>;

  before(async () => {
    pdu = await HostilePdu.start();
    const tree = unitTree(DEVICE, HOSTILE.length + 1) as {
      dev: Record<string, { name: string; label: string; outlet: Record<string, Record<string, unknown>> }>;
    };
    const dev = tree.dev[DEVICE]!;
    dev.name = "unit\u202e";
    dev.label = "\u2067rack\u2069";
    HOSTILE.forEach((label, i) => {
      dev.outlet[String(i)]!.label = label;
    });
    // Name and label both refused: the fallback `Outlet <n>`.
    const last = dev.outlet[String(HOSTILE.length)]!;
    last.name = "x\u202ey";
    last.label = "y\u200ex";
    pdu.tree = tree;
    h = await startAppHarness({
      yaml: () =>
        [
          "Mqtt:",
          "  Embedded: { Bind: 127.0.0.1, Port: 0 }",
          "  ParentTopic: labels",
          "Pdus:",
          "  bad:",
          `    Connection: { Host: ${pdu.host}, Port: ${pdu.port}, Scheme: http, Timeout: 5 }`,
          "    Credentials: { Username: admin, Password: admin }",
          "    PollInterval: 2",
          "    ActionsEnabled: true",
          `Api: { Enabled: true, Bind: 127.0.0.1, Port: 0, ApiKey: ${KEY} }`,
          "Health: { Enabled: true, Bind: 127.0.0.1, Port: 0 }",
          "",
        ].join("\n"),
      waitForFirstPolls: true,
    });
  });
  after(async () => {
    await h?.close();
    await pdu?.close();
  });

  it("the model: refused texts read as blank, display names fall back, with a warning", () => {
    const snapshot = h.app.store.get("bad")?.snapshot;
    assert.ok(snapshot);
    const device = snapshot.devices[0]!;
    assert.equal(device.displayName, DEVICE, "device name and label refused: its id");
    assert.deepEqual(
      device.outlets.map((o) => o.displayName),
      [...HOSTILE.map((_, i) => `Outlet ${i + 1}`), `Outlet ${HOSTILE.length + 1}`],
    );
    const warnings = (snapshot.warnings ?? []).map((w) => w.problem).join("\n");
    assert.match(
      warnings,
      /U\+202E, a bidirectional override, which changes how text is displayed; read as blank/,
    );
  });

  it("MQTT: discovery names and the retained label topics", async () => {
    const ha = await h.subscribe(["homeassistant/#"]);
    await waitFor(() => ha.messages.some((m) => m.topic.includes(DEVICE)), "discovery");
    await waitFor(
      () => h.mqtt.messages.some((m) => m.topic === `labels/bad/${DEVICE}/outlets/0/label`),
      "the label topics",
    );
    const texts = [...h.mqtt.messages, ...ha.messages].flatMap((m) => {
      const out = [m.topic, m.payload];
      try {
        out.push(...strings(JSON.parse(m.payload)));
      } catch {
        // not JSON: the payload itself is checked
      }
      return out;
    });
    assertClean("MQTT", texts);
  });

  it("metrics labels", async () => {
    const r = await h.health.get("/metrics");
    assert.equal(r.status, 200);
    assert.match(r.text, /pdu_outlet_info\{/);
    assertClean("metrics", r.text.split("\n"));
    assert.ok(!r.text.includes("\\u"), "no escaped control character either");
  });

  it("REST readings", async () => {
    const r = await h.api.get("/api/v1/readings");
    assert.equal(r.status, 200);
    assertClean("REST", strings(r.json()));
  });

  it("the console's event stream", async () => {
    const snapshot = await consoleSnapshot(h.app.endpoints.apiPort ?? 0);
    assertClean("console", strings(snapshot));
  });

  it("what it writes: the same labels are refused (400), nothing sent", async () => {
    for (const label of HOSTILE) {
      const before = pdu.requests.length;
      const r = await h.api.send(`/api/v1/instances/bad/outlets/${DEVICE}/0`, {
        method: "PATCH",
        body: { label },
        headers: { "x-api-key": KEY },
      });
      assert.equal(r.status, 400, `${JSON.stringify(label)}: ${r.text}`);
      assert.equal(pdu.requests.slice(before).filter((q) => q.method === "POST").length, 0);
    }
  });
});
