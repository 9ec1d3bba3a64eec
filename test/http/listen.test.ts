/**
 * Both listeners fail clearly when their port is taken (a ConfigError naming the key and port, which
 * the app turns into exit 2) and release their port when closed.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { ConfigError } from "../../src/config/errors.js";
import { startApiServer } from "../../src/http/api/server.js";
import { startHealthServer } from "../../src/http/health/server.js";
import { configFrom, harness } from "../../testkit/http-harness.js";

let blocker: net.Server;
let taken: number;

before(async () => {
  blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const address = blocker.address();
  assert.ok(typeof address === "object" && address !== null);
  taken = address.port;
});

after(async () => {
  await new Promise<void>((resolve) => blocker.close(() => resolve()));
});

const configWith = (api: number, healthPort: number) =>
  configFrom(`
Pdus: { a: { Connection: { Host: 192.0.2.1 } } }
Api: { Enabled: true, Bind: 127.0.0.1, Port: ${api} }
Health: { Bind: 127.0.0.1, Port: ${healthPort} }
`);

test("a taken Api.Port is a ConfigError naming the key and the port", async () => {
  const h = harness(await configWith(taken, 0));
  await assert.rejects(startApiServer(h.deps), (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.key, "Api.Port");
    assert.equal(error.message, `config error: Api.Port: port ${taken} on 127.0.0.1 is already in use`);
    return true;
  });
});

test("a taken Health.Port is a ConfigError naming the key and the port", async () => {
  const h = harness(await configWith(0, taken));
  await assert.rejects(startHealthServer(h.deps), (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.key, "Health.Port");
    assert.match(
      error.message,
      new RegExp(`Health\\.Port: port ${taken} on 127\\.0\\.0\\.1 is already in use`),
    );
    return true;
  });
});

test("closing a listener releases its port", async () => {
  const h = harness(await configWith(0, 0));
  const api = await startApiServer(h.deps);
  const health = await startHealthServer(h.deps);
  assert.notEqual(api.port, health.port);
  await api.close();
  await health.close();
  const again = harness(await configWith(api.port, health.port));
  const api2 = await startApiServer(again.deps);
  const health2 = await startHealthServer(again.deps);
  assert.equal(api2.port, api.port);
  assert.equal(health2.port, health.port);
  await api2.close();
  await health2.close();
});
