/**
 * Broken configuration files: random YAML-ish text, YAML's own hazards (alias bombs, deep nesting,
 * tags, duplicate keys, prototype keys) and random mutations of a valid configuration (wrong types,
 * out-of-range numbers, deleted keys, unknown keys, bad instance ids). In process through
 * `parseConfigText` (thousands of cases) and through the real `check-config` CLI (a few hundred):
 * every failure is exactly one `config error:` line naming the key (or, for a file that is not
 * YAML at all, the file and line), never a stack trace, never exit 1; a mutation that leaves the
 * configuration valid exits 0. Secrets never appear in a message or in the printed configuration.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import fc from "fast-check";
import { stringify } from "yaml";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfigFile, parseConfigText } from "../../src/config/load.js";
import { printedAs } from "../../testkit/hostile-harness.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";
import { REPO_ROOT } from "../../testkit/repo.js";

failOnUnhandled();

const IN_PROCESS_RUNS = 5000;
const TEXT_RUNS = 5000;
// Each check-config run costs about 0.7 s of CPU (node starts and loads the whole service).
const CLI_BATCHES = 30;
const CLI_BATCH = 4;
const MAIN = join(REPO_ROOT, "dist/src/main.js");
const SECRET = "s3cret-Value-9f8e7d";
const dir = mkdtempSync(join(tmpdir(), "hostile-config-"));
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

after(() => rmSync(dir, { recursive: true, force: true }));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** A valid configuration using every section. */
const BASE: JsonObject = {
  Mqtt: {
    Connection: {
      Host: "broker.lan",
      Port: 1883,
      Scheme: "mqtt",
      ValidateCertificate: true,
      ProtocolVersion: 4,
    },
    Credentials: { Username: "bridge", Password: SECRET },
    ClientId: "pdu-bridge",
    ParentTopic: "pdu-bridge",
    KeepAlive: 60,
    Embedded: { Bind: "127.0.0.1", Port: 1883 },
  },
  Pdus: {
    default: {
      Connection: { Host: "10.0.0.10", Port: 80, Scheme: "http", Timeout: 15, ValidateCertificate: true },
      Credentials: { Username: "admin", Password: SECRET },
      PollInterval: 5,
      ActionsEnabled: true,
    },
    "rack-b": { Connection: { Host: "pdu-b.lan", Port: 443 }, PollInterval: 10 },
  },
  HomeAssistant: { DiscoveryEnabled: true, DiscoveryTopic: "homeassistant", SensorExpireAfterSeconds: 300 },
  Api: { Enabled: true, Port: 8082, Bind: "0.0.0.0", ApiKey: SECRET },
  Health: { Enabled: true, Port: 8081, Bind: "0.0.0.0" },
  Logging: { Level: "info" },
};

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Every key path of the base configuration, and which of them are mappings. */
function keyPaths(value: JsonObject, prefix: string[] = []): { path: string[]; mapping: boolean }[] {
  return Object.entries(value).flatMap(([key, child]) => [
    { path: [...prefix, key], mapping: isObject(child) },
    ...(isObject(child) ? keyPaths(child, [...prefix, key]) : []),
  ]);
}
const PATHS = keyPaths(BASE);
const MAPPINGS = [[], ...PATHS.filter((p) => p.mapping).map((p) => p.path)].filter(
  (p) => p.join(".") !== "Pdus",
);

type Mutation =
  | { kind: "set"; path: string[]; value: Json }
  | { kind: "delete"; path: string[] }
  | { kind: "unknown"; path: string[]; key: string; value: Json }
  | { kind: "rename"; from: string; to: string };

const valueArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(0, -1, 1, 65535, 65536, 1e9, 0.5, 86400, 86401, 601, -0.0001, 3, 4, 5),
  fc.constantFrom<Json>(
    "",
    " ",
    "x".repeat(300),
    "true",
    "1883",
    "mqtt",
    "wss",
    "http",
    "https",
    "debug",
    "TRACE",
  ),
  fc.constantFrom<Json>(true, false, null, [], {}),
  fc.string({ maxLength: 20 }),
  fc.integer({ min: -100_000, max: 100_000 }),
  fc.double({ noNaN: true }),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 2 }),
);

/** Keys that are never schema keys: lower-cased or misspelt known keys, or anything with an X. */
const unknownKeyArb = fc.oneof(
  fc
    .constantFrom(...PATHS.map((p) => p.path.at(-1)!))
    .map((k) => (k === k.toLowerCase() ? `${k}x` : k.toLowerCase())),
  fc.constantFrom(...PATHS.map((p) => p.path.at(-1)!)).map((k) => `${k}s`),
  fc.string({ minLength: 1, maxLength: 12 }).map((k) => `X${k}`),
);

const badIdArb = fc.oneof(
  fc.constantFrom(
    "a b",
    "x".repeat(65),
    "ü",
    "a/b",
    "a.b",
    "",
    "-",
    "_",
    "Default",
    "rack_b",
    "RACK-B",
    "a:b",
    "#",
    "__proto__",
  ),
  fc.string({ maxLength: 10 }),
);

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("set" as const),
      path: fc.constantFrom(...PATHS.map((p) => p.path)),
      value: valueArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("delete" as const),
      path: fc.constantFrom(...PATHS.map((p) => p.path)),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("unknown" as const),
      path: fc.constantFrom(...MAPPINGS),
      key: unknownKeyArb,
      value: valueArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("rename" as const),
      from: fc.constantFrom("default", "rack-b"),
      to: badIdArb,
    }),
  },
);

function apply(base: JsonObject, mutations: readonly Mutation[]): JsonObject {
  const config = structuredClone(base);
  const parent = (path: readonly string[]): JsonObject | null => {
    let node: Json = config;
    for (const key of path) {
      if (!isObject(node) || !Object.hasOwn(node, key)) return null;
      node = node[key] ?? null;
    }
    return isObject(node) ? node : null;
  };
  for (const m of mutations) {
    if (m.kind === "rename") {
      const pdus = parent(["Pdus"]);
      if (pdus === null || !Object.hasOwn(pdus, m.from) || Object.hasOwn(pdus, m.to)) continue;
      const renamed: JsonObject = {};
      for (const [k, v] of Object.entries(pdus)) renamed[k === m.from ? m.to : k] = v;
      for (const k of Object.keys(pdus)) delete pdus[k];
      Object.assign(pdus, renamed);
      continue;
    }
    const node = parent(m.kind === "unknown" ? m.path : m.path.slice(0, -1));
    if (node === null) continue;
    // A copy: fast-check may hand the same value to two mutations, and setting it inside itself
    // would make the configuration cyclic (a generator artefact no YAML file can express).
    if (m.kind === "set") node[m.path.at(-1)!] = structuredClone(m.value);
    else if (m.kind === "delete") delete node[m.path.at(-1)!];
    else
      Object.defineProperty(node, m.key, {
        value: m.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return config;
}

/** The key a single, certainly invalid mutation must be reported against, or null when not certain. */
function certainKey(mutations: readonly Mutation[]): string | null {
  if (mutations.length !== 1) return null;
  const [m] = mutations;
  if (m?.kind === "unknown") return [...m.path, m.key].join(".");
  // A mapping or a list where a scalar belongs (no scalar key of the schema accepts either). A
  // mapping with a "<<" key is written as a YAML merge key, which fails as YAML before any key is read.
  if (m?.kind === "set" && (Array.isArray(m.value) || (isObject(m.value) && !Object.hasOwn(m.value, "<<")))) {
    const base = PATHS.find((p) => p.path.join(".") === m.path.join("."));
    if (base && !base.mapping) return m.path.join(".");
  }
  return null;
}

/**
 * What is wrong with a configuration error's message, or null: one line per problem (a file with
 * several problems lists them all), each leading with its key.
 */
function badMessage(error: ConfigError): string | null {
  const { message } = error;
  if (message !== error.problems.map((p) => p.message).join("\n"))
    return `not one line per problem: ${JSON.stringify(message)}`;
  if (error.problems[0]?.key !== error.key) return "the error's key is not its first problem's";
  for (const problem of error.problems) {
    const bad = badLine(problem);
    if (bad !== null) return bad;
  }
  return null;
}

function badLine(error: ConfigError): string | null {
  const { message } = error;
  if (!message.startsWith("config error: ")) return `does not start with "config error: ": ${message}`;
  if (message.includes("\n")) return `more than one line: ${JSON.stringify(message)}`;
  if (/\n\s+at |\bat \S+ \(\S+:\d+:\d+\)/.test(message)) return `stack trace: ${message}`;
  if (message.includes(SECRET)) return `the secret is in the message: ${message}`;
  if (error.key === "") {
    if (!/^config error: (invalid YAML: |the file is empty|the top level must be a mapping)/.test(message))
      return `names no key: ${message}`;
    if (!message.includes("hostile")) return `names no file: ${message}`;
  } else if (!message.startsWith(`config error: ${error.key}: `))
    return `does not lead with its key: ${message}`;
  return null;
}

/** Parses in process: "ok", or the ConfigError; anything else thrown fails the property. */
async function parse(text: string): Promise<"ok" | ConfigError> {
  try {
    await parseConfigText(text, "hostile.yaml", {});
    return "ok";
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw new Error(
      `not a ConfigError: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }
}

test("the base configuration is valid", async () => {
  assert.equal(await parse(stringify(BASE)), "ok");
});

test(`mutated configurations in process: ${IN_PROCESS_RUNS} cases`, async (t) => {
  let valid = 0;
  const kinds = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), async (mutations) => {
      const result = await parse(stringify(apply(BASE, mutations)));
      if (result === "ok") {
        valid++;
        return;
      }
      const problem = badMessage(result);
      assert.equal(problem, null, `${JSON.stringify(mutations)}: ${problem}`);
      kinds.set(
        result.problem.split(/[ (:]/)[0] ?? "",
        (kinds.get(result.problem.split(/[ (:]/)[0] ?? "") ?? 0) + 1,
      );
      const key = certainKey(mutations);
      if (key !== null)
        assert.equal(result.key, key, `${JSON.stringify(mutations)} reported as ${result.message}`);
    }),
    { numRuns: IN_PROCESS_RUNS },
  );
  t.diagnostic(`${valid} of ${IN_PROCESS_RUNS} mutated configurations stayed valid`);
  assert.ok(valid < IN_PROCESS_RUNS / 2, "most mutations break the configuration");
});

// ------------------------------------------------------------------ YAML-ish text

const YAMLISH = [..."abcXYZ019 _-.:,{}[]&*!|>'\"#%@`?~\n\t\\/<=+$"];
const HAZARDS = [
  // a block scalar header glued to a secret: the YAML library quotes it in its message
  stringify(BASE).replace(`Password: ${SECRET}`, `Password: >${SECRET}`),
  // alias bomb ("billion laughs")
  "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
  "a: *nope\n",
  `Pdus: ${"[".repeat(5000)}`,
  `Pdus: ${"[".repeat(2000)}${"]".repeat(2000)}`,
  `Pdus: ${"{a: ".repeat(3000)}1${"}".repeat(3000)}`,
  `Pdus: ${"- ".repeat(3000)}x`,
  Array.from({ length: 1500 }, (_, i) => `${" ".repeat(i)}a:`).join("\n"),
  "Pdus: !!js/function 'function(){}'\n",
  "Pdus: !!binary aGVsbG8=\n",
  "Pdus: !!set {a, b}\n",
  "Pdus: !custom x\n",
  "Pdus:\n  a: {Connection: {Host: h}}\n  a: {Connection: {Host: i}}\n",
  "__proto__: {polluted: 1}\nPdus: {x: {Connection: {Host: h}}}\n",
  "Pdus:\n  __proto__: {Connection: {Host: h}}\n",
  "Pdus:\n  constructor: {Connection: {Host: h}}\n",
  "Pdus:\n  x:\n    Connection: {Host: h}\n    __proto__: {ActionsEnabled: true}\n",
  "base: &b {Connection: {Host: h}}\nPdus:\n  x:\n    <<: *b\n",
  "Pdus:\n  x:\n    <<: {__proto__: {polluted: 1}}\n    Connection: {Host: h}\n",
  "Pdus:\n  ? [a, b]\n  : {Connection: {Host: h}}\n",
  "Pdus:\n  1: {Connection: {Host: h}}\n",
  "Pdus:\n  ~: {Connection: {Host: h}}\n",
  "Pdus:\n  x: {Connection: {Host: 2001-01-01}}\n",
  "Pdus:\n  x: {Connection: {Host: h, Port: 99999999999999999999999}}\n",
  "Pdus:\n  x: {Connection: {Host: h, Port: 0x50}}\n",
  "Pdus:\n  x: {Connection: {Host: h, Timeout: .inf}}\n",
  "Pdus:\n  x: {Connection: {Host: h}, PollInterval: .nan}\n",
  "Pdus: {}\n---\nPdus: {}\n",
  "\uFEFFPdus: {x: {Connection: {Host: h}}}\n",
  "Pdus:\n\tx: 1\n",
  "Pdus: \u0000\n",
  "%YAML 9.9\n---\nPdus: {}\n",
  "",
  "   \n\n# only a comment\n",
  "[]",
  "42",
  "null",
  "Pdus: {x: {Connection: {Host: h}}}\nMqtt: {Connection: {CaFile: /nonexistent/ca.pem}}\n",
  "Pdus: {x: {Connection: {Host: h, CaFile: .}}}\n",
  "Pdus: {x: {Connection: {Host: h}}}\nApi: {Enabled: true, Port: 8081}\n",
  "Pdus: {x: {Connection: {Host: h}, ActionsEnabled: true}}\n",
  "Pdus: {x: {Connection: {Host: h}}, X: {Connection: {Host: h}}}\n",
];

const rawTextArb = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom(...HAZARDS) },
  { weight: 3, arbitrary: fc.string({ unit: fc.constantFrom(...YAMLISH), maxLength: 200 }) },
  {
    weight: 3,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.integer({ min: 0, max: 8 }),
          fc.oneof(
            fc.constantFrom(...PATHS.map((p) => p.path.at(-1)!)),
            fc.string({ unit: fc.constantFrom(...YAMLISH), maxLength: 10 }),
          ),
          fc.string({ unit: fc.constantFrom(...YAMLISH), maxLength: 20 }),
        ),
        { maxLength: 12 },
      )
      .map((lines) =>
        lines.map(([indent, key, value]) => `${" ".repeat(indent)}${key}: ${value}`).join("\n"),
      ),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
  // a valid file cut off or spliced at a random place
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat(), fc.nat(), fc.string({ unit: fc.constantFrom(...YAMLISH), maxLength: 8 }))
      .map(([a, b, junk]) => {
        const text = stringify(BASE);
        const at = a % text.length;
        return text.slice(0, at) + junk + text.slice(at + (b % 20));
      }),
  },
);

/** Text wrapped so that a counterexample prints short. */
const textArb = rawTextArb.map((text) => printedAs({ text }, JSON.stringify(text)));

test(`random YAML-ish text in process: ${TEXT_RUNS} cases, only configuration errors`, async () => {
  for (const hazard of HAZARDS) {
    const result = await parse(hazard);
    if (result !== "ok") assert.equal(badMessage(result), null, JSON.stringify(hazard.slice(0, 80)));
  }
  await fc.assert(
    fc.asyncProperty(textArb, async ({ text }) => {
      const result = await parse(text);
      if (result !== "ok") assert.equal(badMessage(result), null, JSON.stringify(text.slice(0, 200)));
    }),
    { numRuns: TEXT_RUNS },
  );
  assert.deepEqual(
    Object.getOwnPropertyNames(Object.prototype).sort(),
    prototypeNames,
    "Object.prototype changed",
  );
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype was polluted");
});

// ------------------------------------------------------------------ the real CLI

/** The environment of the CLI: no SERVICE_* variable of this machine leaks in. */
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")));

function checkConfig(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, "check-config", "--config", file], {
      env: cleanEnv,
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

let fileCounter = 0;

test(`check-config CLI: ${CLI_BATCHES * CLI_BATCH} files, exit 0 or 2 with the same single message as in process`, async (t) => {
  const codes = new Map<number, number>();
  const caseArb = fc
    .oneof(
      {
        weight: 3,
        arbitrary: fc
          .array(mutationArb, { minLength: 1, maxLength: 3 })
          .map((m) => stringify(apply(BASE, m))),
      },
      { weight: 2, arbitrary: rawTextArb },
    )
    .map((text) => printedAs({ text }, JSON.stringify(text)));
  await fc.assert(
    fc.asyncProperty(fc.array(caseArb, { minLength: CLI_BATCH, maxLength: CLI_BATCH }), async (texts) => {
      await Promise.all(
        texts.map(async ({ text }) => {
          const file = join(dir, `hostile-${fileCounter++}.yaml`);
          writeFileSync(file, text);
          // The same file through the same loader in process: the expected outcome and message.
          let expected: string | null = null;
          try {
            await loadConfigFile(file, {});
          } catch (error) {
            assert.ok(error instanceof ConfigError, `in process: ${String(error)}`);
            expected = error.message;
          }
          const run = await checkConfig(file);
          codes.set(run.code ?? -1, (codes.get(run.code ?? -1) ?? 0) + 1);
          const context = `${file}: ${JSON.stringify(text.slice(0, 200))}\n${run.stderr.slice(0, 500)}`;
          assert.ok(!/\n\s+at /.test(run.stderr + run.stdout), `stack trace: ${context}`);
          assert.ok(!(run.stderr + run.stdout).includes(SECRET), `the secret was printed: ${context}`);
          if (expected === null) {
            assert.equal(run.code, 0, context);
            assert.equal(run.stderr, "", context);
          } else {
            assert.equal(run.code, 2, context);
            assert.equal(run.stderr, `${expected}\n`, context);
            assert.equal(run.stdout, "", context);
          }
        }),
      );
    }),
    { numRuns: CLI_BATCHES },
  );
  t.diagnostic(`exit codes: ${JSON.stringify(Object.fromEntries(codes))}`);
  assert.ok((codes.get(2) ?? 0) > 0 && (codes.get(0) ?? 0) > 0, "both outcomes were exercised");
});
