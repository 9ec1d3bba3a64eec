/**
 * What the replica that received a control request answers when the holder's answer does not come
 * (docs/cluster.md, "REST on any replica"), against real HTTP servers standing for a holder that
 * takes the request and drops the connection, refuses the forward, answers garbage, or is not there:
 * a lost answer is 502 outcome-unknown (never retried), a holder never reached is 503 not-held with
 * Retry-After, a refused forward is 502 without guessing. The forward it sends is signed over its
 * exact body and keeps the command id.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { parseConfigText } from "../../src/config/load.js";
import type { Config } from "../../src/config/schema.js";
import { ForwardingControl } from "../../src/cluster/forward/control.js";
import Fastify from "fastify";
import { createReplicaForwarding } from "../../src/cluster/forward/index.js";
import { CONSOLE_PATH, FORWARD_PATH, READ_PATH } from "../../src/cluster/forward/protocol.js";
import { NonceCache, REPLICA_HEADERS, signAnswer, verifyRequest } from "../../src/cluster/forward/signing.js";
import { createLogger } from "../../src/log.js";
import { ControlStub } from "../../testkit/control-stub.js";
import { freePort } from "../../testkit/repo.js";

const KEY = "forward-answers-key-5b1e";
const SECRET = "forward-answers-secret-0123456789abcdef";
const HOLDER_IDENTITY = "r9/0a1b2c3d4e5f";
const TARGET = { kind: "outlet", deviceId: "E4A1000001000001", index: 0 } as const;

interface Received {
  readonly path: string;
  readonly body: string;
  readonly headers: IncomingMessage["headers"];
}

/** A holder standing in: records each request, then answers as `behave` says. */
async function holder(
  behave: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (c: Buffer) => chunks.push(c));
    request.on("end", () => {
      received.push({
        path: request.url ?? "",
        body: Buffer.concat(chunks).toString("utf8"),
        headers: request.headers,
      });
      behave(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, received };
}

let config: Config;
const servers: Server[] = [];
before(async () => {
  config = await parseConfigText(
    `Api: { Enabled: true, ApiKey: ${KEY} }\nPdus:\n  rack-a:\n    Connection: { Host: 127.0.0.1 }\n    ActionsEnabled: true\n    Credentials: { Username: admin, Password: admin }\n`,
    "t.yaml",
    { SERVICE_CLUSTER_SECRET: SECRET },
  );
});
after(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

function forwarding(url: string | null, holderName: string | null = "r9") {
  const local = new ControlStub();
  const control = new ForwardingControl({
    config: () => config,
    local,
    cluster: {
      member: "r1",
      holds: () => false,
      holderOf: () => holderName,
      urlOf: () => url,
      identityOf: () => HOLDER_IDENTITY,
    },
    logger: createLogger({ level: "silent" }),
  });
  return { control, local };
}

const reboot = {
  instanceId: "rack-a",
  target: TARGET,
  action: "reboot",
  source: { surface: "rest", client: "127.0.0.1" },
  commandId: "cmd-lost-1",
} as const;

test("the holder took the request and the connection dropped: 502 outcome-unknown, sent once, signed, with the command id", async () => {
  const h = await holder((request) => request.socket.destroy());
  servers.push(h.server);
  const { control, local } = forwarding(h.url);
  const outcome = await control.execute(reboot);
  await control.close();
  assert.equal(outcome.ok, false);
  assert.equal(outcome.status, 502);
  assert.equal(!outcome.ok && outcome.problem, "outcome-unknown");
  assert.equal(h.received.length, 1, "never retried");
  const [sent] = h.received;
  assert.equal(sent!.path, FORWARD_PATH);
  const check = (secret: string, identity: string, body = sent!.body) =>
    verifyRequest(
      secret,
      identity,
      { method: "POST", path: FORWARD_PATH, body },
      sent!.headers,
      new NonceCache(),
    );
  assert.equal(check(SECRET, HOLDER_IDENTITY).ok, true, "signed over its exact body, for the holder");
  assert.deepEqual(check("another-secret-0123456789abcdef-xyz", HOLDER_IDENTITY), {
    ok: false,
    reason: "bad-signature",
    from: "r1",
  });
  assert.equal(check(SECRET, HOLDER_IDENTITY, sent!.body.replace("reboot", "off")).ok, false);
  assert.deepEqual(check(SECRET, "r9/ffffffffffff"), { ok: false, reason: "other-replica", from: "r1" });
  // The API key is no part of it: it never travels between replicas.
  assert.ok(!JSON.stringify(sent!.headers).includes(KEY) && !sent!.body.includes(KEY));
  assert.equal(sent!.headers[REPLICA_HEADERS.user], "api-key", "the user it claims, signed");
  const message = JSON.parse(sent!.body) as Record<string, unknown>;
  assert.equal(message.commandId, "cmd-lost-1");
  assert.deepEqual(message.source, { surface: "rest", client: "127.0.0.1", key: true });
  assert.equal(local.requests.length, 0, "nothing carried out here");
});

test("an answer that is not an outcome is lost too (502 outcome-unknown); a refused forward is 502, not unknown", async () => {
  const garbage = await holder((_request, response) => response.end('{"outcome":{"ok":true,"status":201}}'));
  const refused = await holder((_request, response) => {
    response.statusCode = 401;
    response.end("{}");
  });
  servers.push(garbage.server, refused.server);
  const g = forwarding(garbage.url);
  const lost = await g.control.execute(reboot);
  await g.control.close();
  assert.equal(lost.status, 502);
  assert.equal(!lost.ok && lost.problem, "outcome-unknown");
  const r = forwarding(refused.url);
  const no = await r.control.execute({ ...reboot, action: "off" });
  await r.control.close();
  assert.equal(no.status, 502);
  assert.equal(!no.ok && no.problem, undefined);
  assert.match(!no.ok ? no.detail : "", /refused .*nothing was done/);
});

test("nobody holds the instance, or its holder is not there: 503 not-held with Retry-After, nothing sent", async () => {
  const nobody = forwarding("http://127.0.0.1:9", null);
  const a = await nobody.control.execute(reboot);
  await nobody.control.close();
  assert.equal(a.status, 503);
  assert.ok(!a.ok && a.problem === "not-held" && (a.retryAfter ?? 0) > 0);
  const gone = forwarding(`http://127.0.0.1:${await freePort()}`);
  const b = await gone.control.execute(reboot);
  await gone.control.close();
  assert.equal(b.status, 503);
  assert.ok(!b.ok && b.problem === "not-held" && (b.retryAfter ?? 0) > 0, JSON.stringify(b));
});

/** A holder that answers `outcome`, signing the answer with `secret` (none: unsigned). */
async function answering(outcome: unknown, secret: string | null) {
  return holder((request, response) => {
    const body = JSON.stringify({ outcome });
    const nonce = request.headers[REPLICA_HEADERS.nonce];
    response.setHeader("content-type", "application/json");
    if (secret !== null && typeof nonce === "string")
      response.setHeader(REPLICA_HEADERS.signature, signAnswer(secret, nonce, 200, body));
    response.end(body);
  });
}

test("a holder's outcome comes back as it is, marked with who carried it out", async () => {
  const outcome = {
    ok: false,
    status: 409,
    title: "Outlet busy",
    detail: "a reboot of outlet E4A1000001000001/0 is running",
    problem: "outlet-busy",
  };
  const h = await answering(outcome, SECRET);
  servers.push(h.server);
  const { control } = forwarding(h.url);
  const answer = await control.execute(reboot);
  await control.close();
  assert.deepEqual(answer, { ...outcome, carriedOutBy: "r9" });
});

test("an 'ok' from whoever advertises the holder's URL without the secret is not believed: 502 outcome-unknown", async () => {
  const ok = {
    ok: true,
    status: 200,
    instanceId: "rack-a",
    target: TARGET,
    action: "off",
    outlets: [{ deviceId: TARGET.deviceId, index: 0, ok: true }],
  };
  for (const secret of [null, "a-secret-of-another-installation-0123"]) {
    const rogue = await answering(ok, secret);
    servers.push(rogue.server);
    const { control } = forwarding(rogue.url);
    const answer = await control.execute({ ...reboot, action: "off" });
    await control.close();
    assert.equal(answer.status, 502, JSON.stringify(answer));
    assert.equal(!answer.ok && answer.problem, "outcome-unknown");
  }
  // The same answer signed with the installation's secret is taken.
  const real = await answering(ok, SECRET);
  servers.push(real.server);
  const { control } = forwarding(real.url);
  const answer = await control.execute({ ...reboot, action: "off" });
  await control.close();
  assert.equal(answer.status, 200, JSON.stringify(answer));
});

test("a read of an instance held elsewhere is signed for the holder and carries none of the client's credentials; an answer not signed for it is not passed on", async () => {
  const readings = '[{"instanceId":"rack-a"}]';
  const signed = await holder((request, response) => {
    const nonce = request.headers[REPLICA_HEADERS.nonce];
    response.setHeader("content-type", "application/json");
    if (typeof nonce === "string")
      response.setHeader(REPLICA_HEADERS.signature, signAnswer(SECRET, nonce, 200, readings));
    response.end(readings);
  });
  const rogue = await holder((_request, response) => response.end("[]"));
  servers.push(signed.server, rogue.server);
  const read = async (url: string) => {
    const forwarding = createReplicaForwarding({
      config: () => config,
      local: new ControlStub(),
      cluster: {
        member: "r1",
        identity: "r1/aaaaaaaaaaaa",
        holds: () => false,
        holderOf: () => "r9",
        urlOf: () => url,
        identityOf: () => HOLDER_IDENTITY,
        status: () => ({ members: [] }),
      },
      logger: createLogger({ level: "silent" }),
      console: () => null,
    });
    const app = Fastify();
    app.get("/read", (_request, reply) => forwarding.surface.readFromHolder("rack-a", reply));
    const answer = await app.inject({
      method: "GET",
      url: "/read",
      headers: { "x-api-key": KEY, cookie: "pdu_bridge_session=abc", authorization: "Bearer t" },
    });
    await app.close();
    await forwarding.close();
    return answer;
  };
  const good = await read(signed.url);
  assert.equal(good.statusCode, 200);
  assert.equal(good.body, readings);
  const [sent] = signed.received;
  assert.equal(sent!.path, READ_PATH);
  for (const header of ["x-api-key", "cookie", "authorization"])
    assert.equal(sent!.headers[header], undefined, `${header} not passed on`);
  assert.ok(!JSON.stringify(sent!.headers).includes(KEY));
  const verified = verifyRequest(
    SECRET,
    HOLDER_IDENTITY,
    { method: "POST", path: READ_PATH, body: sent!.body },
    sent!.headers,
    new NonceCache(),
  );
  assert.equal(verified.ok, true, "signed like a forward");
  const bad = await read(rogue.url);
  assert.equal(bad.statusCode, 503);
  assert.ok(bad.headers["retry-after"] !== undefined);
});

test("a console ask is one signed request for the replica asked, with no credentials; an answer it did not sign, or a refusal, is not taken", async () => {
  const text = '{"statuses":null,"snapshots":[],"events":{"list":[],"oldest":0,"next":0}}';
  const answering = (status: number, secret: string | null) =>
    holder((request, response) => {
      const nonce = request.headers[REPLICA_HEADERS.nonce];
      const body = status === 200 ? text : '{"status":503}';
      if (secret !== null && typeof nonce === "string")
        response.setHeader(REPLICA_HEADERS.signature, signAnswer(secret, nonce, status, body));
      response.statusCode = status;
      response.end(body);
    });
  const signed = await answering(200, SECRET);
  const foreign = await answering(200, "another-secret-0123456789abcdef-xyz");
  const refusing = await answering(503, SECRET);
  servers.push(signed.server, foreign.server, refusing.server);
  const ask = async (url: string | null) => {
    const forwarding = createReplicaForwarding({
      config: () => config,
      local: new ControlStub(),
      cluster: {
        member: "r1",
        identity: "r1/aaaaaaaaaaaa",
        holds: () => false,
        holderOf: () => "r9",
        urlOf: () => url,
        identityOf: () => HOLDER_IDENTITY,
        status: () => ({ members: [] }),
      },
      logger: createLogger({ level: "silent" }),
      console: () => null,
    });
    try {
      return await forwarding.console.ask("r9", { statuses: true, snapshots: ["rack-a"], eventsAfter: 4 });
    } finally {
      await forwarding.close();
    }
  };
  assert.deepEqual(await ask(signed.url), { ok: true, identity: HOLDER_IDENTITY, text });
  assert.equal(signed.received.length, 1);
  const [sent] = signed.received;
  assert.equal(sent!.path, CONSOLE_PATH);
  assert.deepEqual(JSON.parse(sent!.body), { statuses: true, snapshots: ["rack-a"], eventsAfter: 4 });
  assert.ok(!JSON.stringify(sent!.headers).includes(KEY), "no API key sent");
  const verified = verifyRequest(
    SECRET,
    HOLDER_IDENTITY,
    { method: "POST", path: CONSOLE_PATH, body: sent!.body },
    sent!.headers,
    new NonceCache(),
  );
  assert.equal(verified.ok, true, "signed for the replica asked");
  assert.deepEqual(await ask(foreign.url), {
    ok: false,
    why: "replica r9 did not answer as a replica of this installation",
  });
  assert.deepEqual(await ask(refusing.url), { ok: false, why: "replica r9 answered HTTP 503" });
  assert.deepEqual(await ask(null), {
    ok: false,
    why: "replica r9 advertises no API address within Cluster.PeerNetworks",
  });
  assert.equal(foreign.received.length + refusing.received.length, 2, "one request each, never retried");
});
