/**
 * Hostile control bodies with the right key, against an ActionsEnabled instance whose outlets exist
 * (so a valid body WOULD reach the PDU: the last test proves it does): wrong types, huge strings,
 * deep nesting, prototype-pollution keys, duplicate keys, invalid JSON, wrong content types, bodies
 * just over the 64 KiB limit (declared and chunked). Each is answered with its 4xx, audited exactly
 * once, and the simulator never receives a command; Object.prototype is untouched.
 *
 * Duplicate keys: JSON.parse (and fastify's secure-json-parse) keep the last of two equal keys, so
 * `{"action":"on","action":"off"}` used to switch the outlet off. The service now refuses any body
 * with a duplicate key (src/http/json-body.ts); the unit property at the end checks its detector.
 */
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { duplicateKey } from "../../src/http/json-body.js";
import {
  ClientPool,
  mediaType,
  printedAs,
  startBridge,
  type RunningBridge,
} from "../../testkit/hostile-harness.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

const KEY = `hostile-control-${Math.random().toString(36).slice(2)}-key`;
const RUNS = 5000;
const LIMIT = 65536;
const ACTIONS = ["on", "off", "reboot", "resetStats"];

let bridge: RunningBridge;
let api: ClientPool;
let sent = 0;
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

before(async () => {
  bridge = await startBridge({ apiKey: KEY, instances: { lab: true } });
  api = new ClientPool("127.0.0.1", bridge.apiPort);
  bridge.sim.clearRequests();
});

after(async () => {
  await api?.close();
  await bridge?.close();
});

/** A function: a fresh stream per attempt, sent chunked (no Content-Length). */
type Body = string | Buffer | (() => Readable);

interface Case {
  readonly label: string;
  readonly body: Body;
  readonly contentType: string | undefined;
  readonly expected: number;
}

const JSON_CT = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "application/json;charset=UTF-8",
);
const isValidBody = (value: unknown): boolean =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  Object.keys(value).length === 1 &&
  ACTIONS.includes((value as { action?: unknown }).action as string);

const invalidAction = fc
  .oneof(
    fc.constantFrom(
      "ON",
      "Off",
      " on",
      "on ",
      "on\u0000",
      "reboot\n",
      "resetstats",
      "toggle",
      "",
      "null",
      "1",
      "önn",
      "on\u200b",
    ),
    fc.string({ maxLength: 30 }),
    fc.string({ unit: "grapheme", maxLength: 10 }),
  )
  .filter((s) => !ACTIONS.includes(s));

const anyJson = fc.jsonValue({ maxDepth: 4 });

/** A JSON text with `inner` nested `depth` levels deep (objects or arrays). */
const nested = (depth: number, arrays: boolean, inner: string) =>
  arrays
    ? `{"action":${"[".repeat(depth)}${inner}${"]".repeat(depth)}}`
    : `{"action":${'{"a":'.repeat(depth)}${inner}${"}".repeat(depth)}}`;

const POLLUTION = [
  '{"__proto__":{"polluted":"yes"},"action":"on"}',
  '{"action":"on","__proto__":{"polluted":"yes"}}',
  '{"action":{"__proto__":{"polluted":"yes"}}}',
  '{"constructor":{"prototype":{"polluted":"yes"}},"action":"on"}',
  '{"action":"on","constructor":{"prototype":{"polluted":"yes"}}}',
  '{"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":"yes"},"action":"on"}',
  '{"__pro\\u0074o__":{"polluted":"yes"},"action":"on"}',
  '{"prototype":{"polluted":"yes"},"action":"on"}',
  '{"constructor":"x","action":"on"}',
  '[{"__proto__":{"polluted":"yes"}}]',
  '{"a":[{"b":{"__proto__":{"polluted":"yes"}}}],"action":"on"}',
];

const DUPLICATES = [
  '{"action":"on","action":"off"}',
  '{"action":"off","action":"on"}',
  '{"action":"bogus","action":"on"}',
  '{"action":"on","action":"on"}',
  '{"\\u0061ction":"reboot","action":"on"}',
  '{"action":"on","x":1,"x":2}',
  '{"action" : "on" , "action" : "reboot"}',
];

const INVALID_JSON = [
  '{"action":"on"',
  '{"action":"on"}x',
  '{"action":"on"}{"action":"off"}',
  '{"action":"on"/*c*/}',
  "{'action':'on'}",
  '{"action":"on",}',
  '{"action":on}',
  "{action:'on'}",
  '{"action":"on"}\u0000',
  "NaN",
  "undefined",
  "action=on",
  '"{\\"action\\":\\"on\\"}',
];

const WRONG_CT = [
  undefined,
  "text/plain",
  "text/json",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/jsonx",
  "application/json-patch+json",
  "application/problem+json",
  "application/x-json",
  "application/javascript",
  "application/json, text/plain",
  "json",
  "*/*",
  "",
];

const caseArb: fc.Arbitrary<Case> = fc.oneof(
  // wrong types for "action"
  fc
    .record({
      value: fc.oneof(
        fc.integer(),
        fc.double(),
        fc.boolean(),
        fc.constant(null),
        fc.array(anyJson, { maxLength: 3 }),
        fc.object({ maxDepth: 2 }),
      ),
      ct: JSON_CT,
    })
    .map(({ value, ct }) => ({
      label: "action of a wrong type",
      body: JSON.stringify({ action: value }),
      contentType: ct,
      expected: 400,
    })),
  // strings that are not actions
  fc.tuple(invalidAction, JSON_CT).map(([action, ct]) => ({
    label: "unknown action",
    body: JSON.stringify({ action }),
    contentType: ct,
    expected: 400,
  })),
  // any JSON that is not exactly {"action": <action>}
  fc
    .tuple(
      anyJson.filter((v) => !isValidBody(v)),
      JSON_CT,
    )
    .map(([v, ct]) => ({
      label: "not an action object",
      body: JSON.stringify(v),
      contentType: ct,
      expected: 400,
    })),
  // a valid action plus any other property
  fc
    .tuple(
      fc.constantFrom(...ACTIONS),
      fc.string({ maxLength: 12 }).filter((k) => k !== "action"),
      anyJson,
      JSON_CT,
    )
    .map(([action, k, v, ct]) => ({
      label: "extra property",
      body: `{"action":${JSON.stringify(action)},${JSON.stringify(k)}:${JSON.stringify(v)}}`,
      contentType: ct,
      expected: 400,
    })),
  // huge strings within the limit
  fc.tuple(fc.integer({ min: 1000, max: LIMIT - 100 }), JSON_CT).map(([n, ct]) => ({
    label: "huge string",
    body: `{"action":"${"o".repeat(n)}"}`,
    contentType: ct,
    expected: 400,
  })),
  // deep nesting within the limit
  fc.tuple(fc.integer({ min: 100, max: 10_000 }), fc.boolean(), JSON_CT).map(([depth, arrays, ct]) => ({
    label: "deep nesting",
    body: nested(depth, arrays, '"on"'),
    contentType: ct,
    expected: 400,
  })),
  // prototype pollution
  fc
    .tuple(fc.constantFrom(...POLLUTION), JSON_CT)
    .map(([body, ct]) => ({ label: "prototype pollution", body, contentType: ct, expected: 400 })),
  // duplicate keys, fixed and generated
  fc
    .tuple(fc.constantFrom(...DUPLICATES), JSON_CT)
    .map(([body, ct]) => ({ label: "duplicate key", body, contentType: ct, expected: 400 })),
  fc
    .tuple(fc.constantFrom(...ACTIONS), fc.constantFrom(...ACTIONS), fc.boolean(), JSON_CT)
    .map(([a, b, escaped, ct]) => ({
      label: "duplicate action",
      body: `{${escaped ? '"\\u0061\\u0063tion"' : '"action"'}:${JSON.stringify(a)},"action":${JSON.stringify(b)}}`,
      contentType: ct,
      expected: 400,
    })),
  // not JSON
  fc
    .tuple(fc.constantFrom(...INVALID_JSON), JSON_CT)
    .map(([body, ct]) => ({ label: "invalid JSON", body, contentType: ct, expected: 400 })),
  fc
    .tuple(
      fc.string({ maxLength: 80 }).filter((s) => {
        try {
          return !isValidBody(JSON.parse(s));
        } catch {
          return true;
        }
      }),
      JSON_CT,
    )
    .map(([body, ct]) => ({ label: "random text", body, contentType: ct, expected: 400 })),
  fc.constant<Case>({ label: "empty body", body: "", contentType: "application/json", expected: 400 }),
  fc.constant<Case>({
    label: "invalid UTF-8",
    body: Buffer.concat([Buffer.from('{"action":"o'), Buffer.from([0xff, 0xfe]), Buffer.from('n"}')]),
    contentType: "application/json",
    expected: 400,
  }),
  fc.constant<Case>({
    label: "UTF-16 body",
    body: Buffer.from('{"action":"on"}', "utf16le"),
    contentType: "application/json; charset=utf-16le",
    expected: 400,
  }),
  // wrong content types, also with a valid body
  fc.tuple(fc.constantFrom(...WRONG_CT), fc.constantFrom(...ACTIONS)).map(([ct, action]) => ({
    label: "wrong content type",
    body: JSON.stringify({ action }),
    contentType: ct,
    expected: 415,
  })),
  // just over the limit, declared: a valid action padded with whitespace
  fc
    .tuple(fc.integer({ min: LIMIT + 1, max: LIMIT + 8192 }), fc.constantFrom(...ACTIONS), JSON_CT)
    .map(([size, action, ct]) => {
      const text = JSON.stringify({ action });
      return {
        label: "over the limit",
        body: text + " ".repeat(size - text.length),
        contentType: ct,
        expected: 413,
      };
    }),
  // just over the limit, chunked (no Content-Length): cut off while it is read
  fc
    .tuple(fc.integer({ min: LIMIT + 1, max: LIMIT + 65536 }), fc.constantFrom(...ACTIONS))
    .map(([size, action]) => {
      const text = JSON.stringify({ action });
      const padded = Buffer.from(text + " ".repeat(size - text.length));
      return {
        label: "over the limit, chunked",
        body: () => {
          const chunks: Buffer[] = [];
          for (let at = 0; at < padded.length; at += 16384) chunks.push(padded.subarray(at, at + 16384));
          return Readable.from(chunks);
        },
        contentType: "application/json",
        expected: 413,
      };
    }),
);

const describeBody = (body: Body): string =>
  typeof body === "function"
    ? "(a chunked stream)"
    : typeof body === "string"
      ? JSON.stringify(body)
      : `<${body.toString("hex")}>`;
const printedCaseArb = caseArb.map((c) =>
  printedAs(c, `${c.label} → ${c.expected}, Content-Type ${String(c.contentType)}: ${describeBody(c.body)}`),
);

const pathArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.integer({ min: 0, max: 7 }).map((i) => ({ kind: "outlet" as const, index: i })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "group" as const, index: 0 }) },
);

test(`hostile control bodies with the right key: ${RUNS} cases, each refused with its 4xx`, async (t) => {
  const labels = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(printedCaseArb, pathArb, async (c, target) => {
      const path =
        target.kind === "outlet"
          ? `/api/v1/instances/lab/outlets/${bridge.deviceId}/${target.index}/control`
          : "/api/v1/instances/lab/groups/total/control";
      const headers: Record<string, string> = { "x-api-key": KEY };
      if (c.contentType !== undefined) headers["content-type"] = c.contentType;
      sent++;
      const answer = await api.request({
        method: "POST",
        path,
        headers,
        body: typeof c.body === "function" ? c.body() : c.body,
      });
      labels.set(c.label, (labels.get(c.label) ?? 0) + 1);
      assert.equal(answer.status, c.expected, `${c.label}: ${answer.status} ${answer.body.slice(0, 300)}`);
      assert.equal(mediaType(answer.headers["content-type"]), "application/problem+json");
      const problem = JSON.parse(answer.body) as { status: number; detail: string };
      assert.equal(problem.status, c.expected);
      assert.ok(problem.detail.length > 0);
    }),
    { numRuns: RUNS },
  );
  t.diagnostic(`cases: ${JSON.stringify(Object.fromEntries(labels))}`);
  assert.deepEqual(
    bridge.sim.writes().map((w) => `${w.cmd ?? "?"} ${w.path} ${JSON.stringify(w.body)}`),
    [],
    "the simulator received a command",
  );
  // Every control request was audited exactly once, as refused, never with the key.
  const rest = bridge.log.audits.filter((a) => a.source === "rest");
  assert.equal(rest.length, sent, "one audit line per control request");
  assert.ok(
    rest.every(
      (a) => a.outcome === "refused" && typeof a.status === "number" && a.status >= 400 && a.status < 500,
    ),
  );
  assert.ok(!bridge.log.text().includes(KEY), "the API key appears in the log");
  assert.deepEqual(
    Object.getOwnPropertyNames(Object.prototype).sort(),
    prototypeNames,
    "Object.prototype changed",
  );
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype was polluted");
});

test("a duplicate key names the key in the problem", async () => {
  const answer = await api.request({
    method: "POST",
    path: `/api/v1/instances/lab/outlets/${bridge.deviceId}/0/control`,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: '{"action":"on","action":"off"}',
  });
  assert.equal(answer.status, 400);
  assert.match((JSON.parse(answer.body) as { detail: string }).detail, /"action" more than once/);
  assert.deepEqual(bridge.sim.writes(), []);
});

test("a valid body on the same path does reach the PDU (the refusals above were not vacuous)", async () => {
  const answer = await api.request({
    method: "POST",
    path: `/api/v1/instances/lab/outlets/${bridge.deviceId}/3/control`,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: '{"action":"off"}',
  });
  assert.equal(answer.status, 200, answer.body);
  const writes = bridge.sim.writes();
  assert.equal(writes.length, 1);
  assert.equal(writes[0]?.cmd, "control");
});

// ------------------------------------------------------------------ the duplicate-key detector

const escapeAll = (key: string) =>
  `"${[...key].map((ch) => [...ch].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")).join("")}"`;

test("duplicateKey: none in any JSON.stringify output, found wherever one is inserted", () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 5 }), (value) => {
      assert.equal(duplicateKey(JSON.stringify(value)), undefined);
      assert.equal(duplicateKey(JSON.stringify(value, null, 2)), undefined);
    }),
    { numRuns: 3000 },
  );
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.tuple(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })), {
        minLength: 1,
        maxLength: 6,
        selector: ([k]) => k,
      }),
      fc.nat(),
      fc.nat(),
      fc.jsonValue({ maxDepth: 2 }),
      fc.boolean(),
      fc.integer({ min: 0, max: 3 }),
      (entries, pick, at, value, escaped, depth) => {
        const [key] = entries[pick % entries.length]!;
        const members = entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
        members.splice(
          at % (members.length + 1),
          0,
          `${escaped ? escapeAll(key) : JSON.stringify(key)}:${JSON.stringify(value)}`,
        );
        const object = `{${members.join(",")}}`;
        const text = `${'{"w":['.repeat(depth)}${object}${"]}".repeat(depth)}`;
        JSON.parse(text); // still valid JSON
        assert.equal(duplicateKey(text), key);
      },
    ),
    { numRuns: 3000 },
  );
});
