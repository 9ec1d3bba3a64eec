/**
 * The floor of the API scenario: a bare node:http server answering precomputed bodies, so the
 * difference to the bridge's REST API is everything the API does per request (routing, query
 * validation, building and serialising the answer) and nothing that any HTTP server pays anyway.
 *
 * Run: `node dist/bench/baseline-http.js <json file>` with `{routes: {"<path?query>": body}}`;
 * answers each route with its body as `application/json; charset=utf-8`, anything else 404.
 * Prints `listening <port>` (loopback, ephemeral port).
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const { routes } = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as { routes: Record<string, string> };
const bodies = new Map(Object.entries(routes).map(([path, body]) => [path, Buffer.from(body)]));

const server = createServer((req, res) => {
  const body = bodies.get(req.url ?? "");
  if (body === undefined) {
    res.writeHead(404, { "content-type": "text/plain", "content-length": 9 });
    res.end("not found");
    return;
  }
  res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": body.length });
  res.end(body);
});
// Same keep-alive timeout as fastify's default (72 s), so wrk's connections behave alike.
server.keepAliveTimeout = 72_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
