/**
 * HTTP listener limits (issue 14, item 9) through the real App: 1,000 connections that drip a body,
 * drip their headers or send nothing. `/healthz` keeps answering while they are open, every one of
 * them is closed by the service once `Http.RequestTimeout` / `Http.HeadersTimeout` has passed (set
 * short here), and none of them reaches the PDU. Then `Http.MaxConnections`: connections beyond the
 * cap are closed at once, and the listener answers again when the others are gone.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "limits-test-key-0c9d4e2a";
const REQUEST_TIMEOUT_S = 4;
const HEADERS_TIMEOUT_S = 3;

interface Dripper {
  readonly socket: net.Socket;
  readonly opened: number;
  closedAt: number | null;
  received: string;
}

/**
 * A connection from `from` (a loopback address: each is another client, and one client may hold
 * only `Http.MaxConnectionsPerClient`) that sends `head` and then one byte of `drip` every
 * `everyMs` until it is closed.
 */
function dripper(
  port: number,
  head: string,
  drip: string,
  everyMs: number,
  from = "127.0.0.1",
): Promise<Dripper> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: from });
    const d: Dripper = { socket, opened: Date.now(), closedAt: null, received: "" };
    let timer: NodeJS.Timeout | undefined;
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (d.received += chunk));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(timer);
      d.closedAt = Date.now();
    });
    socket.once("connect", () => {
      if (head !== "") socket.write(head);
      if (drip !== "") {
        timer = setInterval(() => {
          if (!socket.destroyed && socket.writable) socket.write(drip);
        }, everyMs);
      }
      resolve(d);
    });
    socket.once("error", reject);
  });
}

async function healthz(port: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`);
  await response.text();
  return response.status;
}

describe("HTTP listener limits", () => {
  let h: AppHarness<"main">;
  let dev: string;
  const drippers: Dripper[] = [];

  before(async () => {
    h = await startAppHarness<"main">({
      sims: { main: { outlets: 2 } },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [pduYaml("lab", s.main, { actionsEnabled: true, pollInterval: 2 })],
          extra: `Http: { RequestTimeout: ${REQUEST_TIMEOUT_S}, HeadersTimeout: ${HEADERS_TIMEOUT_S}, KeepAliveTimeout: 1 }`,
        }),
    });
    await h.waitForPoll("lab");
    dev = h.sims.main.deviceIds()[0]!;
  });

  after(async () => {
    for (const d of drippers) d.socket.destroy();
    await h?.close();
  });

  it("keeps /healthz answering under 1,000 dripping connections and closes them within the timeouts", async () => {
    h.sims.main.clearRequests();
    const body = JSON.stringify({ action: "reboot" });
    const post =
      `POST /api/v1/instances/lab/outlets/${dev}/0/control HTTP/1.1\r\nHost: x\r\n` +
      `X-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 500}\r\n\r\n`;
    const opening: Promise<Dripper>[] = [];
    // From 100 client addresses, a few connections each.
    const from = (i: number) => `127.0.2.${(i % 100) + 1}`;
    for (let i = 0; i < 400; i++) opening.push(dripper(h.api.port, post, " ", 150, from(i)));
    for (let i = 0; i < 300; i++)
      opening.push(dripper(h.health.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n", "X", 150, from(i)));
    for (let i = 0; i < 150; i++) opening.push(dripper(h.health.port, "", "", 0, from(i + 300)));
    for (let i = 0; i < 150; i++) opening.push(dripper(h.api.port, "", "", 0, from(i + 400)));
    drippers.push(...(await Promise.all(opening)));
    assert.equal(drippers.length, 1000);

    // While they are all open (none is closed before the headers timeout), /healthz answers.
    const stillOpen = drippers.filter((d) => d.closedAt === null).length;
    assert.ok(stillOpen > 900, `${stillOpen} still open when /healthz is asked`);
    for (let i = 0; i < 5; i++) assert.equal(await healthz(h.health.port), 200);

    // Every one is closed by the service: the request timeout, then a check interval, plus slack.
    await waitFor(
      () => drippers.every((d) => d.closedAt !== null),
      "every dripping connection closed",
      (REQUEST_TIMEOUT_S + 8) * 1000,
    );
    for (const d of drippers) {
      assert.doesNotMatch(d.received, /^HTTP\/1\.1 200/, "a dripping request was never answered 200");
    }
    assert.deepEqual(h.sims.main.writes(), [], "no dripping request reached the PDU");
    assert.equal(await healthz(h.health.port), 200);
  });
});

describe("HTTP listener connection cap", () => {
  let h: AppHarness<"main">;
  const held: net.Socket[] = [];

  before(async () => {
    h = await startAppHarness<"main">({
      sims: { main: { outlets: 2 } },
      yaml: (s) =>
        appYaml({
          pdus: [pduYaml("lab", s.main)],
          extra: "Http: { RequestTimeout: 2, HeadersTimeout: 1, MaxConnections: 20 }",
        }),
    });
  });

  after(async () => {
    for (const s of held) s.destroy();
    await h?.close();
  });

  it("closes connections beyond Http.MaxConnections at once and answers again when there is room", async () => {
    // Twenty clients holding one each (a client holding one may still take the last place).
    for (let i = 0; i < 20; i++)
      held.push((await dripper(h.health.port, "", "", 0, `127.0.3.${i + 1}`)).socket);
    // The 21st connection is accepted by the kernel and closed by the service without an answer.
    await assert.rejects(healthz(h.health.port));
    // The silent ones are closed by the headers timeout; then there is room again.
    await waitFor(() => held.every((s) => s.destroyed), "the silent connections closed", 10_000);
    await waitFor(
      async () => (await healthz(h.health.port).catch(() => 0)) === 200,
      "/healthz answers again",
      10_000,
    );
  });
});
