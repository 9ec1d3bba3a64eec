/**
 * `Api.Worker`: what the worker passes to fastify gets fastify's answer, also when fastify answers
 * an error and closes the connection at once. Through the real App with the worker:
 *
 * - unparsable control bodies (fastify answers 400 and closes): the worker ends a passed
 *   request only once its body is flushed: one more (empty) write after fastify answered and
 *   closed fails with EPIPE, and the client would get a 503 "retry" instead of the 400;
 * - bodies over the limit, chunked or declared (413; the worker stops writing at the limit, never
 *   into the connection fastify has closed);
 * - request heads near the limit: fastify's listener refused, with 431 or a cut connection, heads
 *   the worker had accepted and added its own lines to.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { ClientPool, mediaType } from "../../testkit/hostile-harness.js";
import { startApiWorkerHarness, type AppHarness } from "../../testkit/app-harness.js";

const KEY = "worker-forwarding-key-0123456789abcdef";
const ROUNDS = 1500;

let h: AppHarness<"lab">;
let pool: ClientPool;
let control: string;

before(async () => {
  h = await startApiWorkerHarness(KEY);
  pool = new ClientPool("127.0.0.1", h.app.endpoints.apiPort!);
  control = `/api/v1/instances/lab/outlets/${h.sims.lab.deviceIds()[0]}/0/control`;
});

after(async () => {
  await pool?.close();
  await h?.close();
});

/** A control body fastify refuses while parsing it (then closing the connection), of `n` characters. */
function unparsable(i: number): string {
  const pad = "x".repeat(i % 500);
  switch (i % 4) {
    case 0:
      return `{"__proto__":{"polluted":true},"pad":"${pad}"}`;
    case 1:
      return `{"action":"on","action":"off","pad":"${pad}"}`;
    case 2:
      return `{"action":"on","pad":"${pad}"`;
    default:
      return `{"constructor":{"prototype":{"x":1}},"pad":"${pad}"}`;
  }
}

test(`${ROUNDS} unparsable control bodies with the right key: every answer is fastify's 400, never a 503`, async () => {
  const statuses = new Map<number, number>();
  for (let i = 0; i < ROUNDS; i++) {
    const answer = await pool.request(
      {
        method: "POST",
        path: control,
        headers: { "content-type": "application/json", "x-api-key": KEY, "x-pad": "h".repeat(i % 3000) },
        body: unparsable(i),
      },
      // Many addresses, so that no lock-out or rate limit gets in the way.
      `127.0.5.${1 + (i % 200)}`,
    );
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    assert.equal(mediaType(answer.headers["content-type"]), "application/problem+json");
  }
  assert.deepEqual(Object.fromEntries(statuses), { 400: ROUNDS });
  const lost = h.logs().filter((l) => String(l.msg).startsWith("API worker: passing a request on failed"));
  assert.deepEqual(lost, [], "no request was lost on its way to fastify");
});

test("bodies over the limit, chunked or with a length: fastify's 413, never a 503 or a reset", async () => {
  const statuses = new Map<string, number>();
  const ROUNDS_OVER = 1000;
  for (let i = 0; i < ROUNDS_OVER; i++) {
    const size = 64 * 1024 + 1 + ((i * 977) % 300_000);
    const bytes = Buffer.alloc(size, 0x20);
    const chunked = i % 2 === 0;
    let status: string;
    try {
      const answer = await pool.request(
        {
          method: "POST",
          path: control,
          headers: { "content-type": "application/json", "x-api-key": KEY },
          // Without a length, undici sends a stream chunked.
          body: chunked ? Readable.from([bytes.subarray(0, size >> 1), bytes.subarray(size >> 1)]) : bytes,
        },
        `127.0.6.${1 + (i % 200)}`,
      );
      status = String(answer.status);
    } catch (error) {
      status = `error ${String((error as { code?: unknown }).code)}`;
    }
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  assert.deepEqual(Object.fromEntries(statuses), { 413: ROUNDS_OVER });
});

/** The status line's code of a GET whose head is exactly `total` bytes, sent on a raw socket. */
function headOf(port: number, total: number): Promise<number> {
  const base = "GET /api/v1/instances HTTP/1.1\r\nHost: x\r\nX-Pad: \r\n\r\n";
  const head = base.replace("X-Pad: ", `X-Pad: ${"h".repeat(total - base.length)}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (text.includes("\r\n")) socket.destroy();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
    socket.write(head);
  });
}

/** The smallest head (in bytes, between `low` and `high`) that `port` refuses with 431. */
async function smallestRefused(port: number, low: number, high: number): Promise<number> {
  assert.notEqual(await headOf(port, low), 431, `a ${low}-byte head is refused`);
  assert.equal(await headOf(port, high), 431, `a ${high}-byte head is accepted`);
  while (high - low > 1) {
    const mid = (low + high) >> 1;
    if ((await headOf(port, mid)) === 431) high = mid;
    else low = mid;
  }
  return high;
}

test("a request head the worker's listener accepts is answered by fastify, however near the limit", async () => {
  // A bare node:http server has the same limit as the worker's listener.
  const bare = http.createServer((_request, response) => response.end("ok"));
  await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
  let limit: number;
  try {
    limit = await smallestRefused((bare.address() as AddressInfo).port, 8000, 40_000);
  } finally {
    await new Promise<void>((resolve) => bare.close(() => resolve()));
  }
  const api = h.app.endpoints.apiPort!;
  // The worker adds its own lines to the head it passes on: fastify's limit leaves room for them.
  assert.equal(await smallestRefused(api, 8000, 40_000), limit);
  for (let total = limit - 120; total < limit; total += 3)
    assert.equal(await headOf(api, total), 200, `${total} bytes`);
});
