/**
 * One HTTP exchange read from undici's dispatch callbacks (src/pdu/http-request.ts), against a real
 * node:http server on loopback: the answer whole, non-2xx answers unread, the body limit (declared
 * and streamed), the deadline (also for a request still queued behind another), the caller's signal,
 * and nothing left attached to a long-lived signal.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { Client } from "undici";
import { AnswerTooLarge, Exchange, type ExchangeRequest } from "../../src/pdu/http-request.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

type Route = (req: IncomingMessage, res: ServerResponse) => void;

const routes: Record<string, Route> = {
  "/ok": (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    // Three writes: the answer may come in several chunks.
    res.write('{"retCode":0,');
    res.write('"data":{"x":"');
    res.end(`${"y".repeat(100_000)}"}}`);
  },
  "/busy": (_req, res) => {
    res.writeHead(503, { "content-type": "text/plain" });
    res.end("busy");
  },
  "/declared-big": (_req, res) => {
    res.writeHead(200, { "content-length": "5000" });
    res.end("z".repeat(5000));
  },
  "/streamed-big": (_req, res) => {
    res.writeHead(200); // chunked: the size shows only as it arrives
    for (let i = 0; i < 10; i++) res.write("z".repeat(1000));
    res.end();
  },
  "/hang": () => undefined,
  "/echo": (req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: req.headers["content-type"], body: Buffer.concat(parts).toString() }));
    });
  },
};

let server: Server;
let origin: string;
const seen: string[] = [];
const hanging = new Set<ServerResponse>();

before(async () => {
  server = createServer((req, res) => {
    seen.push(req.url ?? "");
    if (req.url === "/hang") hanging.add(res);
    (routes[req.url ?? ""] ?? routes["/busy"]!)(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  for (const res of hanging) res.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function request(path: string, more: Partial<ExchangeRequest> = {}): ExchangeRequest {
  return {
    method: "GET",
    path,
    headers: { accept: "application/json" },
    body: undefined,
    maxBodyBytes: 1_000_000,
    timeoutMs: 5000,
    signal: undefined,
    ...more,
  };
}

test("a 2xx answer comes back whole, in its chunks, with its status", async () => {
  const client = new Client(origin);
  try {
    const exchange = new Exchange(request("/ok"));
    const answer = await exchange.run(client);
    assert.equal(answer.status, 200);
    assert.equal(exchange.status, 200);
    assert.equal(exchange.timedOut, false);
    const text = Buffer.concat(answer.chunks).toString();
    const parsed = JSON.parse(text) as { data: { x: string } };
    assert.equal(parsed.data.x.length, 100_000);
  } finally {
    await client.destroy();
  }
});

test("a POST sends its body and headers", async () => {
  const client = new Client(origin);
  try {
    const body = Buffer.from('{"cmd":"control"}');
    const answer = await new Exchange(
      request("/echo", {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "content-length": String(body.length) },
      }),
    ).run(client);
    assert.deepEqual(JSON.parse(Buffer.concat(answer.chunks).toString()), {
      type: "application/json",
      body: '{"cmd":"control"}',
    });
  } finally {
    await client.destroy();
  }
});

test("a non-2xx answer gives its status and no body, and the client goes on", async () => {
  const client = new Client(origin);
  try {
    const answer = await new Exchange(request("/busy")).run(client);
    assert.equal(answer.status, 503);
    assert.deepEqual(answer.chunks, []);
    assert.equal((await new Exchange(request("/ok")).run(client)).status, 200);
  } finally {
    await client.destroy();
  }
});

test("an answer over the limit fails, whether its length is declared or only streamed", async () => {
  const client = new Client(origin);
  try {
    for (const path of ["/declared-big", "/streamed-big"]) {
      const exchange = new Exchange(request(path, { maxBodyBytes: 4096 }));
      await assert.rejects(exchange.run(client), (e: unknown) => {
        assert.ok(e instanceof AnswerTooLarge, `${path}: ${String(e)}`);
        assert.equal(e.limit, 4096);
        return true;
      });
      assert.equal(exchange.status, 200, "the head had arrived");
    }
    assert.equal((await new Exchange(request("/ok")).run(client)).status, 200);
  } finally {
    await client.destroy();
  }
});

test("the deadline ends an unanswered exchange, and one still queued is never sent", async () => {
  // A Client is one connection without pipelining: the second request waits behind the first.
  const client = new Client(origin);
  try {
    const before = seen.length;
    const first = new Exchange(request("/hang", { timeoutMs: 300 }));
    const second = new Exchange(request("/echo", { timeoutMs: 100 }));
    const results = await Promise.allSettled([first.run(client), second.run(client)]);
    assert.equal(results[0].status, "rejected");
    assert.equal(results[1].status, "rejected");
    assert.equal(first.timedOut, true);
    assert.equal(second.timedOut, true);
    assert.equal(first.status, undefined, "nothing was answered");
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(seen.slice(before), ["/hang"], "the queued request was dropped, not sent late");
  } finally {
    await client.destroy();
  }
});

test("the caller's signal ends an exchange with its reason; nothing stays attached to it", async () => {
  const client = new Client(origin);
  const stop = new AbortController();
  try {
    for (let i = 0; i < 20; i++) await new Exchange(request("/ok", { signal: stop.signal })).run(client);
    const inFlight = Array.from({ length: 15 }, () =>
      new Exchange(request("/hang", { signal: stop.signal })).run(client),
    );
    assert.equal(getEventListeners(stop.signal, "abort").length, 15);
    const exchange = new Exchange(request("/hang", { signal: stop.signal }));
    const pending = exchange.run(client);
    setTimeout(() => stop.abort(new Error("stopping")), 50);
    await assert.rejects(pending, /stopping/);
    for (const p of inFlight) await assert.rejects(p, /stopping/);
    assert.equal(exchange.timedOut, false);
    assert.equal(getEventListeners(stop.signal, "abort").length, 0);

    // Already aborted: refused at once, nothing sent.
    const before = seen.length;
    await assert.rejects(new Exchange(request("/ok", { signal: stop.signal })).run(client), /stopping/);
    assert.equal(seen.length, before);
  } finally {
    await client.destroy();
  }
});

test("a transport failure comes back as undici's error, before any answer", async () => {
  const client = new Client(origin);
  await client.destroy();
  const exchange = new Exchange(request("/ok"));
  await assert.rejects(exchange.run(client), (e: unknown) => {
    assert.equal((e as { code?: string }).code, "UND_ERR_DESTROYED");
    return true;
  });
  assert.equal(exchange.status, undefined);
});
