/**
 * Connections per client on every listener, through the real App: one client address opening 1,025
 * connections that drip their headers is refused beyond `Http.MaxConnectionsPerClient` (and said
 * so in one log line, not one per connection), while `/healthz` and `/readyz` (and on the API
 * listener, with and without the API worker, `/api/v1/health`) from another address answer every
 * time. Then the reserve: clients filling every place outside it, each up to its cap, leave the
 * last places to clients holding (almost) none, so the probes still answer every time and one
 * more flooding address gets only the reserve's share. 127.0.0.0/8 is loopback: 127.0.0.2,
 * 127.0.0.3, … are distinct clients to the listener.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { rawGet } from "../../testkit/raw-http.js";
import { waitFor } from "../../testkit/wait.js";

/** Long enough that no dripping connection is closed by a timeout while a test runs. */
const HEADERS_TIMEOUT_S = 120;
const PER_CLIENT = 32;
const MAX_CONNECTIONS = 1024;

interface Held {
  readonly socket: net.Socket;
  closed: boolean;
}

/** A connection from `from` that sends a request head one byte at a time, every 500 ms. */
function drip(port: number, from: string): Promise<Held> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: from });
    const held: Held = { socket, closed: false };
    const head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Drip: ";
    let timer: NodeJS.Timeout | undefined;
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(timer);
      held.closed = true;
      resolve(held);
    });
    socket.once("connect", () => {
      socket.write(head);
      timer = setInterval(() => {
        if (socket.writable) socket.write("a");
      }, 500);
      resolve(held);
    });
  });
}

/** Opens `count` dripping connections from `from`, a few at a time. */
async function flood(port: number, from: string, count: number): Promise<Held[]> {
  const all: Held[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Math.min(50, count - i);
    all.push(...(await Promise.all(Array.from({ length: batch }, () => drip(port, from)))));
  }
  return all;
}

/** The connections the listener kept: open once the refused ones have had time to be closed. */
async function kept(held: readonly Held[], expected: (open: number) => boolean, what: string) {
  await waitFor(() => expected(held.filter((h) => !h.closed).length), what, 20_000);
  return held.filter((h) => !h.closed).length;
}

/** `times` requests of `path` from `from`, one after the other; the statuses. */
async function probe(port: number, path: string, from: string, times: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < times; i++)
    statuses.push((await rawGet(port, path, [], { localAddress: from, waitMs: 200 })).status);
  return statuses;
}

function closeAll(held: Held[]): void {
  for (const h of held) h.socket.destroy();
  held.length = 0;
}

for (const worker of [false, true]) {
  describe(`connections per client (Api.Worker: ${worker})`, () => {
    let h: AppHarness<"rack">;
    const held: Held[] = [];

    before(async () => {
      h = await startAppHarness<"rack">({
        sims: { rack: { outlets: 2, seed: 7 } },
        yaml: (sims) =>
          appYaml({
            pdus: [pduYaml("rack", sims.rack, { pollInterval: 1 })],
            api: { key: "", worker },
            extra:
              `Http: { HeadersTimeout: ${HEADERS_TIMEOUT_S}, RequestTimeout: ${HEADERS_TIMEOUT_S}, ` +
              `MaxConnections: ${MAX_CONNECTIONS}, MaxConnectionsPerClient: ${PER_CLIENT} }`,
          }),
      });
      await h.waitForPoll("rack");
      await waitFor(async () => (await rawGet(h.health.port, "/readyz")).status === 200, "ready", 20_000);
    });

    after(async () => {
      closeAll(held);
      await h?.close();
    });

    for (const listener of ["health", "api"] as const) {
      test(`the ${listener} listener: one client's 1,025 dripping connections starve nobody`, async (t) => {
        const port = listener === "health" ? h.health.port : h.api.port;
        const paths = listener === "health" ? ["/healthz", "/readyz"] : ["/api/v1/health"];
        const before = h.logs().length;
        held.push(...(await flood(port, "127.0.0.2", 1025)));
        let answered = 0;
        let tried = 0;
        for (const path of paths) {
          const statuses = await probe(port, path, "127.0.0.3", 70);
          tried += statuses.length;
          answered += statuses.filter((s) => s === 200).length;
          assert.deepEqual(
            statuses.filter((s) => s !== 200),
            [],
            `${path} from another client while one floods`,
          );
        }
        const open = await kept(held, (n) => n <= PER_CLIENT, `at most ${PER_CLIENT} connections kept`);
        assert.equal(open, PER_CLIENT, "the client keeps exactly its share");
        const refusals = h
          .logs()
          .slice(before)
          .filter((l) => /connections refused/.test(String(l.msg)));
        assert.ok(refusals.length >= 1 && refusals.length <= 2, `${refusals.length} log lines`);
        assert.equal(refusals[0]!.client, "127.0.0.2");
        t.diagnostic(
          `${listener}: 1025 connections from one client, ${open} kept; probes ${answered}/${tried}`,
        );
        closeAll(held);
      });
    }

    test("the reserve: every place outside it taken, each client at its cap, the probes still answer", async (t) => {
      const port = h.health.port;
      const reserve = MAX_CONNECTIONS / 16;
      const clients = (MAX_CONNECTIONS - reserve) / PER_CLIENT;
      for (let c = 0; c < clients; c++) held.push(...(await flood(port, `127.0.1.${c + 1}`, PER_CLIENT)));
      await kept(held, (n) => n === MAX_CONNECTIONS - reserve, "every place outside the reserve taken");
      // One more flooding address gets the reserve's share only (a client holding one or none).
      const late = await flood(port, "127.0.0.4", 100);
      held.push(...late);
      const lateOpen = await kept(late, (n) => n <= 2, "the late flood kept to the reserve's share");
      let answered = 0;
      for (const path of ["/healthz", "/readyz"]) {
        const statuses = await probe(port, path, "127.0.0.3", 70);
        answered += statuses.filter((s) => s === 200).length;
        assert.deepEqual(
          statuses.filter((s) => s !== 200),
          [],
          `${path} with every place outside the reserve taken`,
        );
      }
      t.diagnostic(
        `reserve: ${clients} clients x ${PER_CLIENT} + 100 from one more (${lateOpen} kept); probes ${answered}/140`,
      );
      closeAll(held);
    });
  });
}
