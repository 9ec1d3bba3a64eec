import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import diagnosticsChannel from "node:diagnostics_channel";
import http from "node:http";
import net, { type AddressInfo, type Socket } from "node:net";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GeistClient, type ClientInstance, type OutletTarget } from "../../../src/pdu/geist/client.js";
import { ParseError, PduError } from "../../../src/pdu/errors.js";
import { findDevice, type Snapshot } from "../../../src/pdu/model.js";
import { startSimulator, type Simulator, type SimulatorOptions } from "../../../src/simulator/index.js";
import { LogCapture } from "../../../testkit/log-capture.js";

interface Overrides {
  Port?: number;
  Timeout?: number;
  ValidateCertificate?: boolean;
  CaFile?: string | null;
  Username?: string | null;
  Password?: string | null;
}

function instanceFor(sim: Simulator, o: Overrides = {}): ClientInstance {
  return {
    id: "pdu1",
    Connection: {
      Host: sim.host,
      Port: o.Port ?? sim.port,
      Scheme: sim.scheme,
      Timeout: o.Timeout ?? 10,
      ValidateCertificate: o.ValidateCertificate ?? true,
      CaFile: o.CaFile ?? null,
    },
    Credentials: {
      Username: o.Username === undefined ? "admin" : o.Username,
      Password: o.Password === undefined ? "admin" : o.Password,
    },
  };
}

/** Starts a simulator and a client for it; both are closed by the suite's `after`. */
function harness(options: SimulatorOptions, overrides: Overrides = {}) {
  const h = {} as { sim: Simulator; client: GeistClient };
  before(async () => {
    h.sim = await startSimulator(options);
    h.client = new GeistClient(instanceFor(h.sim, overrides));
  });
  after(async () => {
    await h.client?.close();
    await h.sim?.close();
  });
  return h;
}

async function rejectsWith(p: Promise<unknown>, check: (e: PduError) => void): Promise<PduError> {
  let caught: unknown;
  try {
    await p;
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof PduError, `expected a PduError, got ${String(caught)}`);
  check(caught);
  return caught;
}

function targetIn(snapshot: Snapshot, deviceId: string, index: number): OutletTarget {
  const device = findDevice(snapshot, deviceId);
  assert.ok(device, `device ${deviceId} in the snapshot`);
  return { deviceId, index, route: device.route };
}

describe("GeistClient reads a single unit", () => {
  const h = harness({ devices: 2, outlets: 12 });

  it("probes OneView once, then polls /api into a snapshot", async () => {
    const { sim, client } = h;
    const first = await client.poll();
    const second = await client.poll();
    assert.equal(first.mode, "single");
    assert.equal(first.instanceId, "pdu1");
    assert.deepEqual(
      first.devices.map((d) => d.id),
      sim.deviceIds().sort(),
    );
    for (const d of first.devices) {
      assert.equal(d.route, null);
      assert.deepEqual(
        d.outlets.map((o) => o.index),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
      );
      for (const o of d.outlets) assert.equal(o.state, sim.outlet(d.id, o.index).state);
    }
    assert.ok(second.timestamp >= first.timestamp);
    assert.deepEqual(
      sim.requests.map((r) => `${r.method} ${r.path}`),
      ["GET /api/conf/oneview/enabled", "GET /api", "GET /api"],
    );
  });

  it("retries the OneView probe on a later poll when it failed", async () => {
    const { sim } = h;
    const client = new GeistClient(instanceFor(sim));
    try {
      sim.clearRequests();
      await sim.setFault("http500");
      await rejectsWith(client.poll(), (e) => {
        assert.equal(e.kind, "http-status");
        assert.equal(e.status, 500);
        assert.match(e.message, new RegExp(`HTTP 500 from 127\\.0\\.0\\.1:${sim.port}`));
      });
      await sim.setFault(null);
      assert.equal((await client.poll()).mode, "single");
      assert.deepEqual(
        sim.requests.map((r) => r.path),
        ["/api/conf/oneview/enabled", "/api/conf/oneview/enabled", "/api"],
      );
    } finally {
      await sim.setFault(null);
      await client.close();
    }
  });

  it("after close, fails as unreachable on every port without sending anything", async () => {
    const { sim } = h;
    const client = new GeistClient(instanceFor(sim));
    await client.poll();
    await client.close();
    sim.clearRequests();
    await rejectsWith(client.poll(), (e) => {
      assert.equal(e.kind, "unreachable");
      assert.match(e.message, /client closed/);
    });
    const route = { hostKey: "member", webPort: sim.port + 1, httpsPort: sim.port + 1 };
    await rejectsWith(client.controlOutlet({ deviceId: "D", index: 0, route }, "on"), (e) => {
      assert.equal(e.kind, "unreachable");
      assert.match(e.message, new RegExp(`:${sim.port + 1}: client closed`));
    });
    assert.deepEqual(sim.requests, []);
  });

  it("refuses a write to a member without a usable proxy port, sending nothing to the master", async () => {
    const { sim, client } = h;
    sim.clearRequests();
    for (const port of [0, Number.NaN]) {
      const route = { hostKey: "member", webPort: port, httpsPort: port };
      await rejectsWith(client.controlOutlet({ deviceId: "D", index: 0, route }, "off"), (e) => {
        assert.equal(e.kind, "malformed");
        assert.match(e.message, /member member has no usable http proxy port/);
      });
    }
    assert.deepEqual(sim.requests, []);
  });

  it("maps a truncated body to malformed and a wrong shape to a ParseError", async () => {
    const { sim, client } = h;
    try {
      await sim.setFault("truncated");
      await rejectsWith(client.poll(), (e) => {
        assert.equal(e.kind, "malformed");
        assert.match(e.message, /not JSON/);
      });
      await sim.setFault("wrong-shape");
      await rejectsWith(client.poll(), (e) => {
        assert.ok(e instanceof ParseError);
        assert.equal(e.path, "$.dev");
      });
    } finally {
      await sim.setFault(null);
    }
  });
});

describe("GeistClient reads a OneView cluster", () => {
  const h = harness({ oneview: { members: 2 }, devices: 1, outlets: 4 });

  it("polls /oneview with every member's devices and their proxy routes", async () => {
    const { sim, client } = h;
    const snap = await client.poll();
    assert.equal(snap.mode, "oneview");
    assert.equal(snap.system.serialNumber, sim.units[0]?.serialNumber);
    assert.deepEqual(
      snap.devices.map((d) => d.id),
      sim.deviceIds().sort(),
    );
    for (const unit of sim.units) {
      for (const id of unit.deviceIds) {
        const route = findDevice(snap, id)?.route;
        if (unit.role === "master") assert.equal(route, null);
        else assert.deepEqual(route, { hostKey: unit.hostKey, webPort: unit.port, httpsPort: unit.port });
      }
    }
    assert.deepEqual(
      sim.requests.map((r) => r.path),
      ["/api/conf/oneview/enabled", "/oneview"],
    );
    const group2 = snap.groups.find((g) => g.key === "2");
    assert.ok(group2);
    assert.equal(group2.displayName, "Web servers");
    assert.ok(group2.members.length > 0);
    assert.deepEqual(group2.members, sim.groupMembers("2"));
    assert.ok(
      snap.groups.find((g) => g.key === "total")?.measurements.some((m) => m.key === "pduTotalRealPower"),
    );
  });

  it("sends a member's writes to its proxy port with that port's own login", async () => {
    const { sim, client } = h;
    const snap = await client.poll();
    const memberUnit = sim.units[1];
    const masterUnit = sim.units[0];
    assert.ok(memberUnit && masterUnit);
    const memberId = memberUnit.deviceIds[0];
    const masterId = masterUnit.deviceIds[0];
    assert.ok(memberId !== undefined && masterId !== undefined);
    sim.clearRequests();

    await client.controlOutlet(targetIn(snap, memberId, 1), "off");
    await client.controlOutlet(targetIn(snap, masterId, 1), "off");
    await client.controlOutlet(targetIn(snap, memberId, 1), "on");

    assert.equal(sim.outlet(memberId, 1).state, "on");
    assert.equal(sim.outlet(masterId, 1).state, "off");
    assert.deepEqual(
      sim.requests.map((r) => [r.port, r.cmd, r.path]),
      [
        [memberUnit.port, "login", "/api/auth/admin"],
        [memberUnit.port, "control", `/api/dev/${memberId}/outlet/1`],
        [masterUnit.port, "login", "/api/auth/admin"],
        [masterUnit.port, "control", `/api/dev/${masterId}/outlet/1`],
        [memberUnit.port, "control", `/api/dev/${memberId}/outlet/1`],
      ],
    );
  });
});

describe("GeistClient writes", () => {
  const password = "Adm1n-Secret";
  const h = harness(
    { devices: 1, outlets: 4, rebootMs: 60_000, users: { admin: password } },
    { Password: password },
  );
  const capture = new LogCapture();
  let client: GeistClient;
  let deviceId: string;
  const target = (index: number): OutletTarget => ({ deviceId, index, route: null });

  before(() => {
    client = new GeistClient(instanceFor(h.sim, { Password: password }), { logger: capture.logger });
    deviceId = h.sim.deviceIds()[0] ?? "";
  });
  after(async () => {
    await client.close();
  });

  it("logs in once and reuses the token across writes that change the PDU", async () => {
    const { sim } = h;
    sim.setOutletState(deviceId, 0, "on");
    sim.setOutletState(deviceId, 1, "off");
    sim.setOutletState(deviceId, 2, "on");
    sim.setEnergy(deviceId, 3, 500);
    sim.clearRequests();

    await client.controlOutlet(target(0), "off");
    assert.equal(sim.outlet(deviceId, 0).state, "off");
    await client.controlOutlet(target(1), "on");
    assert.equal(sim.outlet(deviceId, 1).state, "on");
    await client.controlOutlet(target(2), "reboot");
    assert.equal(sim.outlet(deviceId, 2).state, "off", "power-cycling (off for 60 s)");
    await client.resetOutletEnergy(target(3));
    assert.ok(
      sim.outlet(deviceId, 3).energyKwh < 1,
      `energy reset, now ${sim.outlet(deviceId, 3).energyKwh}`,
    );

    const logins = sim.requests.filter((r) => r.cmd === "login");
    assert.equal(logins.length, 1);
    const writes = sim.writes();
    assert.deepEqual(
      writes.map((w) => w.body),
      [
        { cmd: "control", token: tokenOf(writes[0]?.body), data: { action: "off", delay: false } },
        { cmd: "control", token: tokenOf(writes[0]?.body), data: { action: "on", delay: false } },
        { cmd: "control", token: tokenOf(writes[0]?.body), data: { action: "reboot", delay: false } },
        { cmd: "reset", token: tokenOf(writes[0]?.body), data: { target: "energy" } },
      ],
    );
  });

  it("logs in again after the tokens expire and retries the write once", async () => {
    const { sim } = h;
    sim.setOutletState(deviceId, 0, "on");
    sim.expireTokens();
    sim.clearRequests();
    await client.controlOutlet(target(0), "off");
    assert.equal(sim.outlet(deviceId, 0).state, "off");
    assert.deepEqual(
      sim.requests.map((r) => r.cmd),
      ["control", "login", "control"],
    );
    const [rejected, , retried] = sim.requests;
    assert.notEqual(tokenOf(rejected?.body), tokenOf(retried?.body));
  });

  it("sends every POST with content-length, never chunked", () => {
    const posts = h.sim.requests.filter((r) => r.method === "POST");
    assert.ok(posts.length > 0);
    for (const p of posts) assert.equal(p.chunked, false, `${p.path} was chunked`);
  });

  it("a chunked POST would have been reset by the unit", async () => {
    const { sim } = h;
    sim.clearRequests();
    const outcome = await new Promise<string>((resolve) => {
      const req = http.request({
        host: sim.host,
        port: sim.port,
        method: "POST",
        path: `/api/dev/${deviceId}/outlet/0`,
      });
      req.on("response", (res) => {
        res.resume();
        resolve(`answered ${res.statusCode}`);
      });
      req.on("error", (e: NodeJS.ErrnoException) => resolve(`error ${e.code ?? e.message}`));
      req.write('{"cmd":"control",');
      req.end('"token":"x","data":{"action":"on","delay":false}}');
    });
    assert.match(outcome, /^error (ECONNRESET|EPIPE)/);
    assert.deepEqual(
      sim.requests.map((r) => [r.method, r.chunked]),
      [["POST", true]],
    );
  });

  it("reports a refused write as ret-code with the PDU's retCode", async () => {
    const { sim } = h;
    sim.setOutletControlEnabled(deviceId, false);
    try {
      await rejectsWith(client.controlOutlet(target(0), "on"), (e) => {
        assert.equal(e.kind, "ret-code");
        assert.equal(e.retCode, 2003);
        assert.match(e.message, /^PDU refused: .*\(retCode 2003\)/);
      });
    } finally {
      sim.setOutletControlEnabled(deviceId, true);
    }
  });

  it("logs each request at debug, without the password or tokens", () => {
    const requests = capture.raw.filter((l) => l.includes('"PDU request"'));
    assert.ok(requests.some((l) => l.includes('"method":"POST"') && l.includes('"status":200')));
    const tokens = h.sim.requests
      .map((r) => tokenOf(r.body))
      .filter((t): t is string => t !== undefined && t !== "");
    assert.ok(tokens.length > 0);
    for (const l of capture.raw) {
      assert.ok(!l.includes(password), `password in ${l}`);
      for (const t of tokens) assert.ok(!l.includes(t), `token in ${l}`);
    }
  });
});

function tokenOf(body: unknown): string | undefined {
  return typeof body === "object" && body !== null && "token" in body && typeof body.token === "string"
    ? body.token
    : undefined;
}

describe("GeistClient login failures", () => {
  const h = harness({ devices: 1, outlets: 2, users: { admin: "admin", ops: "s3cret-Pa55" } });

  it("a wrong password fails clearly without the password", async () => {
    const client = new GeistClient(instanceFor(h.sim, { Username: "ops", Password: "Wr0ng-Pa55word" }));
    try {
      const target = { deviceId: h.sim.deviceIds()[0] ?? "", index: 0, route: null };
      const e = await rejectsWith(client.controlOutlet(target, "on"), (err) => {
        assert.equal(err.kind, "ret-code");
        assert.equal(err.retCode, 1004);
        assert.match(err.message, /login .* as "ops" failed: wrong password \(retCode 1004\)/);
      });
      assert.ok(!e.message.includes("Wr0ng-Pa55word") && !e.message.includes("s3cret-Pa55"));
      assert.deepEqual(
        h.sim.requests.filter((r) => r.method === "POST").map((r) => r.cmd),
        ["login"],
        "no write after a failed login",
      );
    } finally {
      await client.close();
    }
  });

  it("an unknown user fails clearly", async () => {
    const client = new GeistClient(instanceFor(h.sim, { Username: "nobody", Password: "x" }));
    try {
      const target = { deviceId: h.sim.deviceIds()[0] ?? "", index: 0, route: null };
      await rejectsWith(client.resetOutletEnergy(target), (e) => {
        assert.equal(e.retCode, 1001);
        assert.match(e.message, /as "nobody" failed: user unknown/);
      });
    } finally {
      await client.close();
    }
  });

  it("verifyCredentials: one login, and which credential the PDU refused", async () => {
    const verdicts = [];
    for (const [user, password] of [
      ["ops", "s3cret-Pa55"],
      ["ops", "Wr0ng-Pa55word"],
      ["nobody", "x"],
    ] as const) {
      const client = new GeistClient(instanceFor(h.sim, { Username: user, Password: password }));
      try {
        h.sim.clearRequests();
        verdicts.push(await client.verifyCredentials());
        assert.deepEqual(
          h.sim.requests.map((r) => [r.method, r.cmd]),
          [["POST", "login"]],
          "one login, nothing else",
        );
      } finally {
        await client.close();
      }
    }
    assert.deepEqual(verdicts[0], { ok: true });
    assert.deepEqual(
      verdicts.slice(1).map((v) => (v.ok ? "ok" : v.refused)),
      ["password", "user"],
    );
    const wrong = verdicts[1]!;
    assert.ok(!wrong.ok && /as "ops" failed: wrong password \(retCode 1004\)/.test(wrong.reason));
    assert.ok(!JSON.stringify(verdicts).includes("Pa55"), "no password in a verdict");
  });

  it("verifyCredentials: a PDU that does not answer is no verdict on the credentials", async () => {
    const client = new GeistClient({
      ...instanceFor(h.sim),
      Connection: { ...instanceFor(h.sim).Connection, Port: 1 },
    });
    try {
      const verdict = await client.verifyCredentials();
      assert.ok(!verdict.ok);
      assert.equal(verdict.refused, null);
      assert.match(verdict.reason, /cannot reach 127\.0\.0\.1:1/);
    } finally {
      await client.close();
    }
  });

  it("a write without credentials says credentials are needed, and sends nothing", async () => {
    const client = new GeistClient(instanceFor(h.sim, { Username: null, Password: null }));
    try {
      h.sim.clearRequests();
      const target = { deviceId: h.sim.deviceIds()[0] ?? "", index: 0, route: null };
      await rejectsWith(client.resetOutletEnergy(target), (e) => assert.match(e.message, /credentials/i));
      assert.equal(h.sim.requests.length, 0);
    } finally {
      await client.close();
    }
  });
});

describe("GeistClient over HTTPS with a self-signed certificate", () => {
  let sim: Simulator;
  let dir: string;
  before(async () => {
    sim = await startSimulator({ https: true, devices: 1, outlets: 2 });
    dir = await mkdtemp(join(tmpdir(), "pdu-client-"));
  });
  after(async () => {
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function pollWith(o: Overrides): Promise<Snapshot> {
    const client = new GeistClient(instanceFor(sim, o));
    try {
      return await client.poll();
    } finally {
      await client.close();
    }
  }

  it("fails as unreachable when the certificate is validated", async () => {
    assert.equal(sim.scheme, "https");
    await rejectsWith(pollWith({ ValidateCertificate: true }), (e) => {
      assert.equal(e.kind, "unreachable");
      assert.match(e.message, /certificate verification failed: self[- ]signed certificate/);
    });
  });

  it("works with ValidateCertificate false", async () => {
    assert.equal((await pollWith({ ValidateCertificate: false })).devices.length, 1);
  });

  it("works with the certificate as CaFile", async () => {
    const caFile = join(dir, "pdu-ca.pem");
    assert.ok(sim.certificatePem);
    await writeFile(caFile, sim.certificatePem);
    assert.equal((await pollWith({ ValidateCertificate: true, CaFile: caFile })).devices.length, 1);
  });
});

describe("GeistClient transport failures", () => {
  const h = harness({ devices: 1, outlets: 2 }, { Timeout: 0.3 });
  const sockets: Socket[] = [];
  const onConnected = (message: unknown): void => {
    const socket = (message as { socket?: Socket }).socket;
    if (socket) sockets.push(socket);
  };
  before(() => diagnosticsChannel.subscribe("undici:client:connected", onConnected));
  after(() => diagnosticsChannel.unsubscribe("undici:client:connected", onConnected));

  it("a PDU that never answers gives a timeout", async () => {
    const { sim, client } = h;
    try {
      await sim.setFault("hang");
      await rejectsWith(client.poll(), (e) => {
        assert.equal(e.kind, "timeout");
        assert.equal(e.message, `no answer from 127.0.0.1:${sim.port} within 0.3s`);
      });
    } finally {
      await sim.setFault(null);
    }
  });

  it("a refused connection gives unreachable", async () => {
    const { sim, client } = h;
    try {
      await sim.setFault("refuse");
      await rejectsWith(client.poll(), (e) => {
        assert.equal(e.kind, "unreachable");
        assert.equal(e.message, `cannot reach 127.0.0.1:${sim.port}: connection refused`);
      });
    } finally {
      await sim.setFault(null);
    }
  });

  it("the caller's abort is passed through as is", async () => {
    const { sim, client } = h;
    try {
      await sim.setFault("hang");
      const reason = new Error("shutting down");
      const controller = new AbortController();
      const pending = client.poll(controller.signal);
      setImmediate(() => controller.abort(reason));
      await assert.rejects(pending, (e) => e === reason);
    } finally {
      await sim.setFault(null);
    }
  });

  it("a body larger than maxBodyBytes is malformed, declared or streamed, and not read to the end", async () => {
    const { sim } = h;
    const small = new GeistClient(instanceFor(sim, { Timeout: 30 }), { maxBodyBytes: 1024 * 1024 });
    try {
      const tiny = new GeistClient(instanceFor(sim), { maxBodyBytes: 64 });
      try {
        await rejectsWith(tiny.poll(), (e) => {
          assert.equal(e.kind, "malformed");
          assert.match(e.message, /larger than the limit of 64 bytes/);
        });
      } finally {
        await tiny.close();
      }
      assert.equal((await small.poll()).mode, "single", "probe cached before the fault");
      const bytesRead = (): number => sockets.reduce((n, s) => n + s.bytesRead, 0);
      const before = bytesRead();
      await sim.setFault("huge");
      await rejectsWith(small.poll(), (e) => {
        assert.equal(e.kind, "malformed");
        assert.match(e.message, /larger than the limit of 1048576 bytes/);
      });
      const read = bytesRead() - before;
      assert.ok(read > 1024 * 1024, `measured the body's connection (${read} bytes)`);
      assert.ok(read < 16 * 1024 * 1024, `read ${read} bytes of a 56 MiB body`);
    } finally {
      await sim.setFault(null);
      await small.close();
    }
  });
});

/**
 * A TCP relay on a free loopback port in front of the simulator, for what a unit's network does to
 * connections. `wire` sets up each accepted connection; `track` registers a socket to destroy at
 * close.
 */
async function startRelay(
  wire: (downstream: Socket, track: (socket: Socket) => void) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const open = new Set<Socket>();
  const track = (socket: Socket) => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    socket.on("error", () => undefined);
  };
  const server = net.createServer((downstream) => {
    track(downstream);
    wire(downstream, track);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const s of open) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe("GeistClient against a web server that is not a Geist PDU", () => {
  /** A real HTTP server: 404 with an HTML page for every path, or an HTML page with 200. */
  async function webServer(status: number): Promise<{ port: number; close(): Promise<void> }> {
    const server = http.createServer((_req, res) => {
      res.writeHead(status, { "content-type": "text/html" }).end("<html><body>Not Found</body></html>");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }
  const instanceAt = (port: number): ClientInstance => ({
    id: "rack-a",
    Connection: {
      Host: "127.0.0.1",
      Port: port,
      Scheme: "http",
      Timeout: 2,
      ValidateCertificate: true,
      CaFile: null,
    },
    Credentials: { Username: "admin", Password: "admin" },
  });

  for (const status of [404, 200]) {
    it(`HTTP ${status} with a web page: the error says it does not look like a Geist PDU's API and what to check`, async () => {
      const web = await webServer(status);
      const client = new GeistClient(instanceAt(web.port));
      try {
        await rejectsWith(client.poll(), (e) => {
          if (status === 404)
            assert.match(e.message, /^HTTP 404 from 127\.0\.0\.1:\d+ \(GET \/api\/conf\/oneview\/enabled\)/);
          assert.match(e.message, /does not look like a Geist PDU's API/);
          assert.match(e.message, /check Pdus\.rack-a\.Connection \(Host, Port, Scheme/);
          assert.match(e.message, /Driver \(snmp for an SNMP PDU\)/);
        });
      } finally {
        await client.close();
        await web.close();
      }
    });
  }

  it("a Geist unit's own 500 gets no such hint", async () => {
    const h2 = await startSimulator({ devices: 1, outlets: 1 });
    const client = new GeistClient(instanceFor(h2));
    try {
      await h2.setFault("http500");
      await rejectsWith(client.poll(), (e) => {
        assert.equal(e.status, 500);
        assert.doesNotMatch(e.message, /Geist PDU's API/);
      });
    } finally {
      await client.close();
      await h2.close();
    }
  });
});

describe("GeistClient on a dropped connection", () => {
  let sim: Simulator;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let connections = 0;
  before(async () => {
    sim = await startSimulator({ devices: 1, outlets: 2 });
    // Resets its first connection as soon as a request arrives, like a unit dropping a keep-alive
    // connection the client is about to reuse.
    relay = await startRelay((downstream, track) => {
      if (++connections === 1) {
        downstream.once("data", () => downstream.resetAndDestroy());
        return;
      }
      const upstream = net.connect(sim.port, sim.host);
      track(upstream);
      upstream.on("error", () => downstream.destroy());
      downstream.on("close", () => upstream.destroy());
      downstream.pipe(upstream).pipe(downstream);
    });
  });
  after(async () => {
    await relay.close();
    await sim.close();
  });

  it("retries a POST once on a fresh connection", async () => {
    const client = new GeistClient(instanceFor(sim, { Port: relay.port }));
    try {
      const deviceId = sim.deviceIds()[0] ?? "";
      sim.setOutletState(deviceId, 1, "on");
      await client.controlOutlet({ deviceId, index: 1, route: null }, "off");
      assert.equal(sim.outlet(deviceId, 1).state, "off");
      assert.ok(connections >= 2, `${connections} connections`);
      assert.deepEqual(
        sim.requests.map((r) => r.cmd),
        ["login", "control"],
        "the reset login never reached the unit and was sent again",
      );
    } finally {
      await client.close();
    }
  });
});

describe("GeistClient while a poll is stuck", () => {
  let sim: Simulator;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  const held: (() => void)[] = [];
  let dropped = 0;
  before(async () => {
    sim = await startSimulator({ devices: 1, outlets: 2 });
    // Holds back every `GET /api` until released: a poll the unit is slow to answer.
    relay = await startRelay((downstream, track) => {
      const upstream = net.connect(sim.port, sim.host);
      track(upstream);
      downstream.on("close", () => upstream.destroy());
      upstream.on("close", () => {
        dropped++;
        downstream.destroy();
      });
      upstream.pipe(downstream);
      downstream.on("data", (chunk: Buffer) => {
        if (chunk.toString("latin1").startsWith("GET /api ")) held.push(() => upstream.write(chunk));
        else upstream.write(chunk);
      });
    });
  });
  after(async () => {
    await relay.close();
    await sim.close();
  });

  it("still writes: commands do not queue behind a poll", async () => {
    const client = new GeistClient(instanceFor(sim, { Port: relay.port }));
    try {
      const deviceId = sim.deviceIds()[0] ?? "";
      sim.setOutletState(deviceId, 0, "on");
      const poll = client.poll();
      for (let waited = 0; held.length === 0; waited += 5) {
        assert.ok(waited < 5000, "the poll reached the relay");
        await new Promise((r) => setTimeout(r, 5));
      }
      await client.controlOutlet({ deviceId, index: 0, route: null }, "off");
      assert.equal(sim.outlet(deviceId, 0).state, "off");
      // Behind the poll, the write would only go out once the unit dropped the stalled connection.
      assert.equal(dropped, 0, "written while the poll waits, no connection dropped");
      for (const release of held.splice(0)) release();
      const snapshot = await poll;
      assert.equal(findDevice(snapshot, deviceId)?.outlets[0]?.state, "off");
    } finally {
      await client.close();
    }
  });
});

describe("GeistClient's read connection", () => {
  let sim: Simulator;
  before(async () => {
    sim = await startSimulator({ outlets: 4, seed: 7 });
  });
  after(async () => {
    await sim.close();
  });

  /** Waits until the simulator holds `n` open connections; false when it does not within 2 s. */
  async function settlesAt(n: number): Promise<boolean> {
    for (let waited = 0; waited < 2000; waited += 10) {
      if (sim.openConnections === n) return true;
      await new Promise((r) => setTimeout(r, 10));
    }
    return false;
  }

  it("is closed after each poll when polls are further apart than the keep-alive", async () => {
    const client = new GeistClient({ ...instanceFor(sim), PollInterval: 10 });
    try {
      for (let i = 0; i < 3; i++) {
        await client.poll();
        assert.ok(await settlesAt(0), `poll ${i}: the unit holds ${sim.openConnections} idle connections`);
      }
    } finally {
      await client.close();
    }
  });

  it("is kept for the next poll when polls come sooner than that", async () => {
    const live = new GeistClient({ ...instanceFor(sim), PollInterval: 10 });
    live.setPollInterval(1000); // a live configuration change
    for (const client of [
      new GeistClient({ ...instanceFor(sim), PollInterval: 1 }),
      new GeistClient(instanceFor(sim)),
      live,
    ]) {
      try {
        await client.poll();
        await client.poll();
        assert.ok(await settlesAt(1), `${sim.openConnections} connections open`);
      } finally {
        await client.close();
      }
      assert.ok(await settlesAt(0));
    }
  });
});
