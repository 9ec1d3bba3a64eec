/**
 * Hostile MQTT commands to the real service (simulator + App with its embedded aedes broker, one
 * ActionsEnabled instance whose outlets exist, one without actions): payloads that are not a
 * command, payloads over the 1 KiB limit (up to 200 KiB; 1 MB packets are over the broker's packet
 * size limit, checked separately), retained messages, and topic levels that are
 * empty, unicode, very long, not an integer, or name no outlet. What a client can actually send:
 * topics with `+`/`#` or too many levels are refused by the broker itself (it drops the client),
 * checked separately. Every command that reaches the bridge is refused and audited with its topic
 * (the bus's `control` event of each; the log folds a flood of them, with their count), nothing is
 * sent to the PDU, and the bridge keeps publishing afterwards.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { connectAsync, type MqttClient } from "mqtt";
import type { ControlEvent } from "../../src/bus.js";
import { printedAs, startBridge, type RunningBridge } from "../../testkit/hostile-harness.js";
import { Recorder } from "../../testkit/mqtt-client.js";
import { waitFor } from "../../testkit/wait.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

const KEY = `hostile-mqtt-${Math.random().toString(36).slice(2)}-key`;
const RUNS = 4000;
const P = "pdu-bridge";
const COMMANDS = ["set", "reboot", "resetStats"];
/** The bridge's subscriptions (src/mqtt/topics.ts commandSubscriptions) for `lab` and `ro`. */
const FILTERS = ["lab", "ro"].flatMap((id) => [
  ...COMMANDS.map((c) => `${P}/${id}/+/outlets/+/${c}`),
  `${P}/${id}/groups/+/set`,
]);

/** The topic that tells when the bridge hears commands (a device no generated topic names). */
const PROBE = `${P}/lab/probe-${process.pid}/outlets/0/set`;
let bridge: RunningBridge;
/** Every MQTT command's audit as the bus tells it (the log folds floods). */
const audits: ControlEvent[] = [];
let client: MqttClient;
let watcher: Recorder;
/** The last message sent by `client`, and what it was doing when the broker dropped it. */
let lastPublished = "";
let droppedAfter: string | null = null;

/** Whether an MQTT topic filter matches a topic name (`+` is exactly one level, possibly empty). */
function matches(filter: string, topic: string): boolean {
  const f = filter.split("/");
  const t = topic.split("/");
  return f.length === t.length && f.every((level, i) => level === "+" || level === t[i]);
}
const delivered = (topic: string) => FILTERS.some((f) => matches(f, topic));
/** Command topics of any instance, as other clients may publish them (settings included). */
const ANY_COMMAND = [
  ...COMMANDS.map((c) => `${P}/+/+/outlets/+/${c}`),
  `${P}/+/groups/+/set`,
  ...["label", "onDelay", "offDelay", "rebootDelay", "poaAction"].map((s) => `${P}/+/+/outlets/+/${s}/set`),
];
/**
 * Topics only the bridge may publish at its embedded broker (src/mqtt/broker.ts): everything under
 * the parent topic but command topics, and the discovery prefix but Home Assistant's status.
 */
const bridgeOnly = (topic: string) =>
  topic === P ||
  (topic.startsWith(`${P}/`) && !ANY_COMMAND.some((f) => matches(f, topic))) ||
  topic === "homeassistant" ||
  (topic.startsWith("homeassistant/") && topic !== "homeassistant/status");

const connect = (clientId: string): Promise<MqttClient> =>
  connectAsync({
    host: bridge.broker.host,
    port: bridge.broker.port,
    clientId,
    reconnectPeriod: 0,
    protocolVersion: 4,
  });

/** Fails (instead of hanging) when `promise` does not settle within `ms`. */
async function withTimeout<T>(promise: Promise<T>, what: string, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no ${what} within ${ms} ms (connected: ${client.connected})`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Publishes and, when the bridge subscribes to the topic, waits for the audit it causes. */
async function publishAndAudit(
  topic: string,
  payload: Buffer,
  retain: boolean,
): Promise<Record<string, unknown> | null> {
  const before = audits.length;
  lastPublished = `${topic.slice(0, 200)} (${topic.length} chars, ${payload.length} bytes, retain ${retain})`;
  await withTimeout(
    client.publishAsync(topic, payload, { qos: 1, retain }),
    `PUBACK of ${topic.slice(0, 120)}`,
  );
  if (!delivered(topic)) return null;
  await waitFor(() => audits.length > before, `the audit of ${topic.slice(0, 200)}`);
  assert.equal(audits.length, before + 1, "exactly one audit per command");
  const event = audits[before]!;
  const { status } = event;
  const outcome = status === 200 ? "done" : status >= 500 ? "failed" : "refused";
  return {
    ...event,
    topic: event.source.surface === "mqtt" ? event.source.topic : null,
    source: "mqtt",
    outcome,
  };
}

before(async () => {
  bridge = await startBridge({ apiKey: KEY, instances: { lab: true, ro: false } });
  bridge.app.bus.on("control", (e) => {
    if (e.source.surface === "mqtt" && e.source.topic !== PROBE) audits.push(e);
  });
  watcher = await Recorder.connect(bridge.broker, [`${P}/#`]);
  client = await connect(`hostile-${process.pid}`);
  client.on("close", () => (droppedAfter ??= lastPublished));
  // The bridge subscribes after its connect, possibly after start() returned: probe until it hears.
  const probe = PROBE;
  const deadline = Date.now() + 10_000;
  while (!bridge.log.audits.some((a) => a.topic === probe)) {
    if (Date.now() > deadline) throw new Error("the bridge never received a command");
    await client.publishAsync(probe, "probe", { qos: 1 });
    await new Promise((r) => setTimeout(r, 100));
  }
  bridge.sim.clearRequests();
});

after(async () => {
  await client?.endAsync(true);
  await watcher?.close();
  await bridge?.close();
});

// ------------------------------------------------------------------ generators

/** Can be one topic level of a PUBLISH (no separator, no wildcard: the broker drops a client for those). */
const level = (s: string) => !s.includes("/") && !s.includes("+") && !s.includes("#");
const isOnOff = (payload: Buffer) => ["on", "off"].includes(payload.toString("utf8").trim().toLowerCase());

const hostileDevice = fc.oneof(
  fc.constantFrom("", "nodev", " ", "E4A1", "\u0000", "probe", "..", "$SYS", "🔌", "é"),
  fc
    .string({ unit: "grapheme", minLength: 1, maxLength: 20 })
    .filter((s) => !s.includes("/") && !s.includes("+") && !s.includes("#")),
  fc.integer({ min: 1000, max: 30_000 }).map((n) => "D".repeat(n)),
);
const hostileIndex = fc.oneof(
  fc.constantFrom(
    "",
    "-1",
    "01",
    "00",
    "1.0",
    "1e0",
    " 1",
    "1 ",
    "٣",
    "８",
    "0x1",
    "8",
    "99999999",
    "4294967296",
    "NaN",
    "Infinity",
  ),
  fc
    .string({ maxLength: 6 })
    .filter((s) => !/^(0|[1-7])$/.test(s) && !s.includes("/") && !s.includes("+") && !s.includes("#")),
);
const realIndex = fc.integer({ min: 0, max: 7 }).map(String);

const payloadArb = fc.oneof(
  fc.constantFrom(
    "",
    "ON\u0000",
    "o n",
    "1",
    "true",
    "reboot",
    "toggle",
    '{"action":"on"}',
    "onn",
    "\u200bon",
  ),
  fc.string({ maxLength: 40 }),
  fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString("latin1")),
);

interface Msg {
  readonly label: string;
  readonly topic: string;
  readonly payload: Buffer;
  readonly retain: boolean;
  /** Expected audit status when the bridge receives it; null: any refusal. */
  readonly status: number | null;
}

const msgArb = (deviceId: string): fc.Arbitrary<Msg> =>
  fc.oneof(
    // set with a payload that is not on/off (the outlet exists)
    fc
      .tuple(realIndex, payloadArb)
      .map(([i, p]) => ({ topic: `${P}/lab/${deviceId}/outlets/${i}/set`, payload: Buffer.from(p, "utf8") }))
      .filter((m) => !isOnOff(m.payload))
      .map((m) => ({ ...m, label: "bad payload", retain: false, status: 400 })),
    // any command with a payload over 1 KiB
    fc
      .tuple(
        realIndex,
        fc.constantFrom(...COMMANDS),
        fc.integer({ min: 1025, max: 65_536 }),
        fc.constantFrom("on", "reboot", " "),
      )
      .map(([i, c, size, fill]) => ({
        label: "payload over 1 KiB",
        topic: `${P}/lab/${deviceId}/outlets/${i}/${c}`,
        payload: Buffer.from(fill.repeat(Math.ceil(size / fill.length)).slice(0, size)),
        retain: false,
        status: 413,
      })),
    // hostile device or index levels, any command and payload
    fc
      .tuple(
        fc.oneof(
          fc.tuple(hostileDevice, fc.oneof(realIndex, hostileIndex)),
          fc.tuple(fc.constant(deviceId), hostileIndex),
        ),
        fc.constantFrom(...COMMANDS),
        fc.constantFrom("on", "off", "reboot", ""),
      )
      .map(([[d, i], c, p]) => ({
        label: "hostile topic level",
        topic: `${P}/lab/${d}/outlets/${i}/${c}`,
        payload: Buffer.from(p),
        retain: false,
        status: null,
      })),
    // an instance without ActionsEnabled, a valid command
    fc.tuple(realIndex, fc.constantFrom(...COMMANDS)).map(([i, c]) => ({
      label: "ActionsEnabled false",
      topic: `${P}/ro/${deviceId}/outlets/${i}/${c}`,
      payload: Buffer.from(c === "set" ? "on" : ""),
      retain: false,
      status: 409,
    })),
    // group commands (the single unit has no groups: the core answers 404)
    fc
      .tuple(
        fc.oneof(fc.constantFrom("total", "1", "", "Total"), fc.string({ maxLength: 8 }).filter(level)),
        fc.constantFrom("on", "off", "reboot", "x"),
      )
      .map(([g, p]) => ({
        label: "group command",
        topic: `${P}/lab/groups/${g}/set`,
        payload: Buffer.from(p),
        retain: false,
        status: null,
      })),
    // topics the bridge does not subscribe to: never delivered to it
    fc
      .oneof(
        fc.constantFrom(
          `${P}/LAB/${deviceId}/outlets/0/reboot`,
          `${P}/lab/${deviceId}/outlets/0/REBOOT`,
          `${P}/lab/${deviceId}/outlets/0/set/extra`,
          `${P}//lab/${deviceId}/outlets/0/set`,
          `/${P}/lab/${deviceId}/outlets/0/set`,
          `${P}/lab/${deviceId}/outlet/0/set`,
          `${P}/lab`,
          `${P}/lab/x/status`,
          "homeassistant/status",
          "🔌/⚡",
        ),
        fc
          .string({ unit: "grapheme", minLength: 1, maxLength: 40 })
          .filter((s) => !s.includes("+") && !s.includes("#")),
        fc.integer({ min: 1000, max: 60_000 }).map((n) => `${P}/${"t".repeat(n)}`),
      )
      // `$` topics are the broker's own and the bridge's status and discovery topics are reserved:
      // publishing to one gets the client dropped (tested below).
      .filter((topic) => !delivered(topic) && !topic.startsWith("$") && !bridgeOnly(topic))
      .map((topic) => ({
        label: "not a command topic",
        topic,
        payload: Buffer.from("reboot"),
        retain: false,
        status: null,
      })),
  );

const printedMsgArb = (deviceId: string) =>
  msgArb(deviceId).map((m) =>
    printedAs(
      m,
      `${m.label}: ${m.topic.slice(0, 120)} (${m.topic.length} chars) retain=${m.retain} ` +
        `payload ${m.payload.length} bytes ${JSON.stringify(m.payload.subarray(0, 60).toString("utf8"))}`,
    ),
  );

// ------------------------------------------------------------------ tests

test(`hostile MQTT commands: ${RUNS} cases, each refused and audited, nothing sent to the PDU`, async (t) => {
  const labels = new Map<string, number>();
  let deliveredCount = 0;
  await fc.assert(
    fc.asyncProperty(printedMsgArb(bridge.deviceId), async (m) => {
      labels.set(m.label, (labels.get(m.label) ?? 0) + 1);
      const audit = await publishAndAudit(m.topic, m.payload, m.retain);
      if (audit === null) return;
      deliveredCount++;
      assert.equal(audit.topic, m.topic, "the audit line names the topic");
      assert.equal(audit.source, "mqtt");
      assert.equal(
        audit.outcome,
        "refused",
        `${m.label} ${m.topic.slice(0, 120)}: ${JSON.stringify(audit).slice(0, 400)}`,
      );
      if (m.status !== null) assert.equal(audit.status, m.status, `${m.label}: ${String(audit.detail)}`);
    }),
    { numRuns: RUNS },
  );
  t.diagnostic(
    `cases: ${JSON.stringify(Object.fromEntries(labels))}; delivered to the bridge: ${deliveredCount}`,
  );
  assert.ok(deliveredCount > RUNS / 2, "most cases reached the bridge");
  assert.deepEqual(
    bridge.sim.writes().map((w) => `${w.cmd ?? "?"} ${w.path}`),
    [],
    "the simulator received a command",
  );
  // The log folds the flood: fewer lines than refusals, and lines that count the ones folded.
  const lines = bridge.log.audits.filter((l) => l.source === "mqtt");
  assert.ok(lines.length < deliveredCount, `${lines.length} audit lines for ${deliveredCount} refusals`);
  await waitFor(
    () => bridge.log.audits.some((l) => typeof l.folded === "number" && l.folded > 0),
    "a line with the count of the folded ones",
    15_000,
  );
});

test("200 KiB payloads on every command topic are refused by size", async () => {
  const big = Buffer.alloc(200 * 1024, "o");
  for (const command of COMMANDS) {
    for (const topic of [`${P}/lab/${bridge.deviceId}/outlets/0/${command}`, `${P}/lab/groups/total/set`]) {
      const audit = await publishAndAudit(topic, big, false);
      assert.equal(audit?.status, 413, JSON.stringify(audit));
      assert.match(String(audit?.detail), /204800 bytes is over the 1024-byte limit/);
    }
  }
  assert.deepEqual(bridge.sim.writes(), []);
});

test("a retained command, valid or not: the embedded broker drops that client, keeps nothing, the bridge hears nothing", async () => {
  const seen = audits.length;
  for (const [n, payload] of ["off", "garbage", "reboot"].entries()) {
    const rogue = await connect(`rogue-retained-${process.pid}-${n}`);
    const closed = new Promise<void>((resolve) => rogue.once("close", () => resolve()));
    rogue.publish(`${P}/lab/${bridge.deviceId}/outlets/${n}/set`, payload, { qos: 0, retain: true });
    await withTimeout(closed, `close of the connection that sent a retained ${payload}`);
    await rogue.endAsync(true);
  }
  assert.equal(audits.length, seen, "no command reached the bridge");
  assert.deepEqual(bridge.sim.writes(), []);
});

test("1 MB packets are over the embedded broker's MaxPacketSize: it drops that client, the bridge hears nothing", async () => {
  const seen = audits.length;
  const big = Buffer.alloc(1024 * 1024, "o");
  for (const [n, command] of COMMANDS.entries()) {
    const rogue = await connect(`rogue-big-${process.pid}-${n}`);
    const closed = new Promise<void>((resolve) => rogue.once("close", () => resolve()));
    rogue.publish(`${P}/lab/${bridge.deviceId}/outlets/0/${command}`, big, { qos: 0 });
    await withTimeout(closed, `close of the connection that sent 1 MB on ${command}`);
    await rogue.endAsync(true);
  }
  assert.equal(audits.length, seen, "no command reached the bridge");
  assert.deepEqual(bridge.sim.writes(), []);
});

test("wildcards, too many levels, $SYS or a bridge-only topic in a PUBLISH: the broker drops that client, the bridge hears nothing", async () => {
  const seen = audits.length;
  const topics = [
    `${P}/lab/+/outlets/0/reboot`,
    `${P}/lab/${bridge.deviceId}/outlets/+/reboot`,
    `${P}/lab/#`,
    `${P}/lab/${bridge.deviceId}/outlets/0/reboot/#`,
    "#",
    "+",
    `${P}/${"x/".repeat(120)}reboot`,
    `$SYS/${P}/lab/${bridge.deviceId}/outlets/0/reboot`,
    // The bridge's own topics at its embedded broker: statuses, states, labels, values, discovery.
    `${P}/status`,
    `${P}/lab/status`,
    `${P}/lab/${bridge.deviceId}/outlets/0/state`,
    `${P}/lab/${bridge.deviceId}/outlets/0/label`,
    `${P}/lab/${bridge.deviceId}/outlets/0/measurements/realPower`,
    `${P}/LAB/${bridge.deviceId}/outlets/0/rebootx`,
    "homeassistant/status/x",
    `homeassistant/switch/${bridge.deviceId}_0/config`,
  ];
  for (const [n, topic] of topics.entries()) {
    const rogue = await connect(`rogue-${process.pid}-${n}`);
    const closed = new Promise<void>((resolve) => rogue.once("close", () => resolve()));
    rogue.publish(topic, "on", { qos: 0 });
    await withTimeout(closed, `close of the connection that published to ${topic.slice(0, 60)}`);
    await rogue.endAsync(true);
  }
  assert.equal(audits.length, seen, "no command reached the bridge");
  assert.deepEqual(bridge.sim.writes(), []);
});

test("the bridge still publishes and still executes a valid command afterwards", async () => {
  assert.equal(bridge.app.mqtt?.status().connected, true);
  const since = Date.now();
  const measurement = `${P}/lab/${bridge.deviceId}/outlets/0/measurements/`;
  await waitFor(
    () => watcher.messages.some((m) => m.at > since && m.topic.startsWith(measurement)),
    "a fresh measurement",
    10_000,
  );
  // Only the bridge publishes its status (the rogue clients above were dropped for trying): the
  // retained availability a new subscriber gets is the bridge's own.
  const fresh = await Recorder.connect(bridge.broker, [`${P}/status`]);
  try {
    assert.equal((await fresh.waitFor(`${P}/status`, (m) => m.retain)).payload, "online");
  } finally {
    await fresh.close();
  }

  const audit = await publishAndAudit(
    `${P}/lab/${bridge.deviceId}/outlets/2/set`,
    Buffer.from(" OFF\n"),
    false,
  );
  assert.equal(audit?.status, 200, JSON.stringify(audit));
  assert.equal(
    bridge.sim.writes().length,
    1,
    "a valid command reaches the PDU (the refusals were not vacuous)",
  );
  assert.ok(!bridge.log.text().includes(KEY), "the API key appears in the log");
  assert.deepEqual(
    bridge.log.lines.filter((e) => e.level === "error" || e.level === "fatal"),
    [],
    "error lines in the log",
  );
});
