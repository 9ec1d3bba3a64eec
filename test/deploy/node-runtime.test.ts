/**
 * The supported Node versions (package.json engines, README) and the one dependency that needs a
 * recent Node: fastify's light-my-request loads the ESM-only cookie@2 with require(), which works
 * unflagged from Node 20.19 and 22.12 (cookie's own engines field says >= 22). CI runs the whole suite
 * on Node 20 and on Node 24, so both ends of the range run this file.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import Fastify from "fastify";
import { REPO_ROOT } from "../../testkit/repo.js";

const manifest = JSON.parse(readFileSync(`${REPO_ROOT}package.json`, "utf8")) as {
  engines: { node: string };
};

type Version = readonly [number, number, number];
const parse = (v: string): Version => {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v);
  assert.ok(match, `a version: ${v}`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
};
const atLeast = (v: Version, min: Version) => {
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i]! > min[i]!;
  return true;
};

/** The engines range's forms used here: `^X.Y.Z` and `>=X[.Y.Z]`, joined with `||`. */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  return range.split("||").some((part) => {
    const alt = part.trim();
    if (alt.startsWith("^")) {
      const min = parse(alt.slice(1));
      return v[0] === min[0] && atLeast(v, min);
    }
    if (alt.startsWith(">=")) {
      const [major, minor = "0", patch = "0"] = alt.slice(2).split(".");
      return atLeast(v, parse(`${major}.${minor}.${patch}`));
    }
    throw new Error(`engines form not understood: ${alt}`);
  });
}

describe("the supported Node versions", () => {
  it("are 20.19+, 22.12+ and 24+ (where require() loads ES modules), and this Node is one", () => {
    const range = manifest.engines.node;
    for (const v of ["20.19.0", "20.20.2", "22.12.0", "24.0.0", "24.21.0", "26.1.0"]) {
      assert.ok(satisfies(v, range), `${v} is supported (${range})`);
    }
    for (const v of ["18.20.0", "20.18.3", "22.11.0", "23.5.0"]) {
      assert.ok(!satisfies(v, range), `${v} is not supported (${range})`);
    }
    assert.ok(satisfies(process.version, range), `this Node, ${process.version}, is in ${range}`);
    const readme = readFileSync(`${REPO_ROOT}README.md`, "utf8");
    assert.match(readme, /Node\.js 24\b/, "the README names Node 24");
    assert.match(readme, /20\.19/, "the README names the oldest supported version");
  });

  it("loads fastify's light-my-request with cookie@2 and injects a request with cookies", async () => {
    const app = Fastify();
    app.get("/", async (request, reply) => {
      reply.header("set-cookie", "seen=1; Path=/");
      return request.headers.cookie ?? "";
    });
    try {
      const response = await app.inject({ method: "GET", url: "/", cookies: { session: "a b" } });
      assert.equal(response.statusCode, 200);
      assert.equal(response.body, "session=a%20b", "cookie@2 encoded the request's cookie");
      assert.deepEqual(
        response.cookies.map((c) => [c.name, c.value]),
        [["seen", "1"]],
      );
    } finally {
      await app.close();
    }
  });
});
