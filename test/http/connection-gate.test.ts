/**
 * The connection gate on a real node:net server, connections from chosen loopback addresses: the
 * per-client limit, an exempt address (a trusted proxy) held only to the total, the reserve kept for
 * clients holding fewer than two, places given back as connections close, and refusals logged once
 * however many there are.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { ConnectionGate, reserveOf } from "../../src/http/connection-gate.js";
import { waitFor } from "../../testkit/wait.js";

const lines: { fields: Record<string, unknown>; message: string }[] = [];
let gate: ConnectionGate;
let server: net.Server;
let port: number;
const clients: net.Socket[] = [];

before(async () => {
  // 32 places, 2 of them the reserve; 4 per client; 127.0.0.9 a trusted proxy.
  gate = new ConnectionGate(
    { maxConnections: 32, maxPerClient: 4, exempt: ["127.0.0.9"] },
    (fields, message) => lines.push({ fields, message }),
  );
  server = net.createServer(() => undefined);
  gate.attach(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as net.AddressInfo).port;
});

after(async () => {
  for (const c of clients) c.destroy();
  gate.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Opens `count` connections from `from`; how many the server kept once the refused ones closed. */
async function open(from: string, count: number): Promise<net.Socket[]> {
  const opened = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Socket>((resolve) => {
          const socket = net.connect({ host: "127.0.0.1", port, localAddress: from }, () => resolve(socket));
          socket.on("error", () => undefined);
          clients.push(socket);
        }),
    ),
  );
  // A refused connection is closed by the server at once; a kept one stays open.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return opened;
}

const alive = (sockets: readonly net.Socket[]) => sockets.filter((s) => !s.destroyed && !s.readableEnded);

test("the reserve is a sixteenth of the places", () => {
  assert.equal(reserveOf(1024), 64);
  assert.equal(reserveOf(32), 2);
  assert.equal(reserveOf(15), 0);
});

test("one client keeps its share; refusals are logged once, naming the client and the rule", async () => {
  const sockets = await open("127.0.0.2", 10);
  await waitFor(() => alive(sockets).length === 4, "4 kept");
  assert.equal(gate.open, 4);
  assert.equal(lines.length, 1, JSON.stringify(lines));
  assert.equal(lines[0]!.fields.client, "127.0.0.2");
  assert.equal(lines[0]!.fields.rule, "client");
  assert.match(lines[0]!.message, /^connections refused: the client holds Http.MaxConnectionsPerClient/);
});

test("a trusted proxy is held to the total only, and the reserve to clients holding fewer than two", async () => {
  const proxy = await open("127.0.0.9", 26);
  await waitFor(() => alive(proxy).length === 26, "the proxy keeps 26 (32 - 2 reserve - 4)");
  assert.equal(gate.open, 30);
  // The reserve: a client holding none gets in, up to one more; one holding 4 does not.
  const fresh = await open("127.0.0.3", 3);
  assert.equal(alive(fresh).length, 2, "the reserve's share");
  assert.equal(gate.open, 32);
  const full = await open("127.0.0.5", 1);
  assert.equal(alive(full).length, 0, "the listener is full");
  assert.equal(lines.length, 1, "still one line this minute");
  // Places come back as connections close.
  for (const s of proxy) s.destroy();
  await waitFor(() => gate.open === 6, "the proxy's connections counted out");
  const later = await open("127.0.0.5", 1);
  assert.equal(alive(later).length, 1);
});
