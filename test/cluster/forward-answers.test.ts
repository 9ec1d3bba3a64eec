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
import { FORWARD_PATH, FORWARD_SIGNATURE_HEADER, forwardSigned } from "../../src/cluster/forward/protocol.js";
import { createLogger } from "../../src/log.js";
import { ControlStub } from "../../testkit/control-stub.js";
import { freePort } from "../../testkit/repo.js";

const KEY = "forward-answers-key-5b1e";
const TARGET = { kind: "outlet", deviceId: "E4A1000001000001", index: 0 } as const;

interface Received {
  readonly path: string;
  readonly body: string;
  readonly signature: string | undefined;
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
      const signature = request.headers[FORWARD_SIGNATURE_HEADER];
      received.push({
        path: request.url ?? "",
        body: Buffer.concat(chunks).toString("utf8"),
        signature: typeof signature === "string" ? signature : undefined,
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
    {},
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
    cluster: { member: "r1", holds: () => false, holderOf: () => holderName, urlOf: () => url },
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
  assert.ok(forwardSigned(KEY, sent!.body, sent!.signature), "signed over its exact body");
  assert.ok(!forwardSigned("another-key-of-16+chars", sent!.body, sent!.signature));
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

test("a holder's outcome comes back as it is, marked with who carried it out", async () => {
  const outcome = {
    ok: false,
    status: 409,
    title: "Outlet busy",
    detail: "a reboot of outlet E4A1000001000001/0 is running",
    problem: "outlet-busy",
  };
  const h = await holder((_request, response) => {
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ outcome }));
  });
  servers.push(h.server);
  const { control } = forwarding(h.url);
  const answer = await control.execute(reboot);
  await control.close();
  assert.deepEqual(answer, { ...outcome, carriedOutBy: "r9" });
});
