/**
 * The sign-in's parts on their own: the session store's bounds (a cap, a per-user cap, idle and
 * absolute timeouts, nothing kept under the raw id), the sealed sign-in cookie (altered or foreign
 * text opens to nothing), the return path's rules, roles and names from claims, and check-config
 * showing the client secret masked.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { parseConfigText } from "../../../src/config/load.js";
import { effectiveConfigYaml } from "../../../src/config/mask.js";
import { CookieSeal, readCookie } from "../../../src/http/auth/cookies.js";
import { safeReturnPath } from "../../../src/http/auth/plugin.js";
import { claimAt, claimValues, roleOf, userOf } from "../../../src/http/auth/roles.js";
import { MAX_SESSIONS_PER_USER, SessionStore } from "../../../src/http/auth/sessions.js";

const user = (sub: string) => ({ sub, name: sub.toUpperCase() });

test("sessions end after the idle timeout, after the absolute timeout however active, and at delete", () => {
  const store = new SessionStore({ idleMs: 1000, absoluteMs: 5000, max: 10 });
  const { id, session } = store.create({ user: user("a"), role: "operator", idToken: null }, 0);
  assert.equal(store.get(id, 999), session);
  assert.equal(store.get(id, 1000), null, "idle");
  assert.equal(store.size, 0);
  const active = store.create({ user: user("a"), role: "operator", idToken: null }, 0);
  for (let t = 500; t < 5000; t += 500) {
    assert.ok(store.get(active.id, t));
    store.touch(active.id, active.session, t);
  }
  assert.equal(store.get(active.id, 5000), null, "absolute");
  const ended = store.create({ user: user("b"), role: "viewer", idToken: null }, 0);
  assert.equal(store.delete(ended.id), true);
  assert.equal(store.get(ended.id, 1), null);
});

test("the store holds at most Max sessions (least recently used first out) and 16 per user", () => {
  const store = new SessionStore({ idleMs: 60_000, absoluteMs: 60_000, max: 50 });
  const first = store.create({ user: user("u0"), role: "viewer", idToken: null }, 0);
  const second = store.create({ user: user("u1"), role: "viewer", idToken: null }, 0);
  store.touch(first.id, first.session, 1);
  for (let i = 2; i < 200; i++) store.create({ user: user(`u${i}`), role: "viewer", idToken: null }, 2);
  assert.equal(store.size, 50);
  assert.equal(store.get(second.id, 3), null, "the least recently used went");
  const mine = Array.from({ length: MAX_SESSIONS_PER_USER + 4 }, () =>
    store.create({ user: user("busy"), role: "operator", idToken: null }, 4),
  );
  assert.equal(mine.filter((m) => store.get(m.id, 5) !== null).length, MAX_SESSIONS_PER_USER);
  assert.equal(store.get(mine[0]!.id, 5), null, "the user's oldest went");
});

test("ids are 256 random bits; malformed cookie values are never looked up", () => {
  const store = new SessionStore({ idleMs: 1000, absoluteMs: 1000, max: 10 });
  const { id } = store.create({ user: user("a"), role: "viewer", idToken: null }, 0);
  assert.match(id, /^[A-Za-z0-9_-]{43}$/);
  for (const bad of [undefined, "", "x", `${id}x`, id.slice(1), "A".repeat(43)])
    assert.equal(store.get(bad, 1), null);
});

test("a sealed sign-in cookie opens only unaltered and only in the process that sealed it", () => {
  const seal = new CookieSeal();
  const text = seal.seal({ s: "state", n: "nonce" });
  assert.deepEqual(seal.open(text), { s: "state", n: "nonce" });
  assert.equal(new CookieSeal().open(text), undefined);
  fc.assert(
    fc.property(fc.nat(text.length - 1), fc.constantFrom(..."ABCabc019-_"), (at, c) => {
      const altered = text.slice(0, at) + c + text.slice(at + 1);
      fc.pre(altered !== text);
      return seal.open(altered) === undefined;
    }),
  );
  assert.equal(seal.open("not base64!"), undefined);
  assert.equal(readCookie("a=1; pdu-bridge-session=xyz; b=2", "pdu-bridge-session"), "xyz");
});

test("the return path stays under /ui/ on this origin", () => {
  const keep = ["/ui/", "/ui/#/i/rack", "/ui/#/i/rack/o/DEV/3", "/ui/?x=1"];
  for (const path of keep) assert.equal(safeReturnPath(path), path);
  const refuse = [
    undefined,
    42,
    "",
    "/",
    "https://evil.example/ui/",
    "//evil.example/ui/",
    "/ui/\\\\evil.example",
    "/ui/../api/v1/health",
    "/ui/%2e%2e/docs",
    "/ui/auth/logout",
    "/ui/\u0000",
    "/ui/\n//evil",
    `/ui/${"x".repeat(3000)}`,
  ];
  for (const path of refuse) assert.equal(safeReturnPath(path), "/ui/", String(path));
  fc.assert(
    fc.property(fc.string(), (s) => {
      const out = safeReturnPath(s);
      return (
        out.startsWith("/ui/") &&
        !out.startsWith("/ui/auth/") &&
        new URL(out, "http://h.test").origin === "http://h.test"
      );
    }),
  );
});

test("roles and names from the provider's claims", () => {
  const rules = { Viewer: ["pdu-viewers"], Operator: ["pdu-operators", "/ops/pdu"] };
  assert.equal(roleOf(claimValues(["x", "pdu-viewers"]), rules), "viewer");
  assert.equal(roleOf(claimValues(["pdu-viewers", "/ops/pdu"]), rules), "operator");
  assert.equal(roleOf(claimValues("pdu-operators"), rules), "operator");
  assert.equal(roleOf(claimValues([{ name: "pdu-operators" }, 7]), rules), null);
  assert.equal(roleOf(claimValues(undefined), rules), null);
  const claims = {
    realm_access: { roles: ["pdu-operators"] },
    "https://example.com/groups": ["pdu-viewers"],
  };
  assert.deepEqual(claimAt(claims, "realm_access.roles"), ["pdu-operators"]);
  assert.deepEqual(claimAt(claims, "https://example.com/groups"), ["pdu-viewers"]);
  assert.equal(claimAt(claims, "realm_access.nothing"), undefined);
  assert.equal(claimAt({ a: "x" }, "a.length"), undefined);
  assert.deepEqual(userOf({ sub: "u1", name: "Ann\u0007 Admin" }), { sub: "u1", name: "Ann Admin" });
  assert.deepEqual(userOf({ sub: "u1", preferred_username: "ann" }), { sub: "u1", name: "ann" });
  assert.deepEqual(userOf({ sub: "u1" }), { sub: "u1", name: "u1" });
  assert.equal(userOf({ sub: "u\n1" }), null);
  assert.equal(userOf({ sub: 7 }), null);
});

test("check-config shows the client secret from the environment masked", async () => {
  const yaml =
    "Pdus:\n  a:\n    Connection: { Host: 192.0.2.1 }\nApi:\n  PublicUrl: https://pdu.example.com\n  Oidc: { Enabled: true, Issuer: https://id.example.com/realms/ops }\n";
  const config = await parseConfigText(yaml, "t.yaml", { SERVICE_OIDC_CLIENT_SECRET: "the-real-secret" });
  assert.equal(config.Api.Oidc.ClientSecret, "the-real-secret");
  const shown = effectiveConfigYaml(config);
  assert.match(shown, /ClientSecret: "\*\*\*"/);
  assert.doesNotMatch(shown, /the-real-secret/);
});
