import assert from "node:assert/strict";
import http from "node:http";
import type { Socket } from "node:net";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { HUGE_BODY_BYTES, startSimulator, type Simulator } from "../../src/simulator/index.js";
import { getJson, login, postJson, request, TransportError, waitFor } from "../../testkit/sim-http.js";

async function transportError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof TransportError, String(e));
    return e.code;
  }
  assert.fail("expected a transport error");
}

describe("simulator chunked POSTs", () => {
  let sim: Simulator;
  let lenient: Simulator;
  before(async () => {
    [sim, lenient] = await Promise.all([
      startSimulator({ outlets: 2 }),
      startSimulator({ outlets: 2, rejectChunked: false }),
    ]);
  });
  after(() => Promise.all([sim.close(), lenient.close()]));

  it("resets a chunked POST; the same body with Content-Length works", async () => {
    const id = sim.deviceIds()[0] ?? "";
    const token = await login(sim.url);
    sim.setOutletState(id, 0, "on");
    const url = `${sim.url}/api/dev/${id}/outlet/0`;
    const body = { cmd: "control", token, data: { action: "off", delay: false } };
    sim.clearRequests();
    assert.match(await transportError(request(url, { body, chunked: true })), /^(ECONNRESET|EPIPE)$/);
    assert.equal(sim.outlet(id, 0).state, "on");
    assert.deepEqual(
      sim.requests.map((r) => [r.method, r.chunked]),
      [["POST", true]],
    );
    assert.equal((await postJson(url, body)).retCode, 0);
    assert.equal(sim.outlet(id, 0).state, "off");
  });

  it("accepts chunked POSTs when rejectChunked is false", async () => {
    const token = await login(lenient.url);
    const id = lenient.deviceIds()[0] ?? "";
    const body = { cmd: "control", token, data: { action: "off", delay: false } };
    const res = await request(`${lenient.url}/api/dev/${id}/outlet/0`, { body, chunked: true });
    assert.equal((JSON.parse(res.text) as { retCode: number }).retCode, 0);
    assert.equal(lenient.requests.at(-1)?.chunked, true);
  });
});

describe("simulator over HTTPS", () => {
  let sim: Simulator;
  before(async () => {
    sim = await startSimulator({ https: true, oneview: { members: 1 }, outlets: 2 });
  });
  after(() => sim.close());

  it("works with the certificate as CA, by IP and by name, on every port", async () => {
    assert.equal(sim.scheme, "https");
    assert.match(sim.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = sim.certificatePem ?? "";
    assert.match(ca, /^-----BEGIN CERTIFICATE-----/);
    assert.equal((await getJson(`${sim.url}/api/conf/oneview/enabled`, { ca })).data, true);
    assert.equal((await getJson(`https://localhost:${sim.port}/api/sys/oem`, { ca })).data, "GEI");
    const member = sim.units[1]?.url ?? "";
    assert.match(member, /^https:/);
    assert.ok(await login(member, "admin", "admin", { ca }));
  });

  it("fails verification without it", async () => {
    const code = await transportError(request(`${sim.url}/api`));
    assert.match(code, /SELF_SIGNED|UNABLE_TO_VERIFY/);
  });

  it("shares one certificate between simulators of a process", async () => {
    const other = await startSimulator({ https: true });
    try {
      assert.equal(other.certificatePem, sim.certificatePem);
    } finally {
      await other.close();
    }
  });

  it("resets chunked POSTs over TLS too", async () => {
    const ca = sim.certificatePem ?? "";
    const res = request(`${sim.url}/api/auth/admin`, {
      ca,
      chunked: true,
      body: { token: "", cmd: "login", data: { password: "admin" } },
    });
    assert.match(await transportError(res), /^(ECONNRESET|EPIPE)$/);
  });
});

describe("simulator idle keep-alive drop", () => {
  let sim: Simulator;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  before(async () => {
    sim = await startSimulator({ outlets: 1, idleDropMs: 100 });
  });
  after(async () => {
    agent.destroy();
    await sim.close();
  });

  it("destroys a keep-alive connection left idle (long before node's own 5 s keep-alive timeout)", async () => {
    let socket: Socket | undefined;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get(`${sim.url}/api/sys/oem`, { agent }, resolve);
      req.on("socket", (s) => (socket = s));
      req.on("error", reject);
    });
    res.resume();
    await once(res, "end");
    assert.equal(res.headers.connection, "keep-alive");
    assert.ok(socket);
    if (!socket.destroyed) {
      const closed = once(socket, "close");
      const deadline = new Promise((_, reject) =>
        setTimeout(() => reject(new Error("not dropped")), 3000).unref(),
      );
      await Promise.race([closed, deadline]);
    }
    assert.ok(socket.destroyed);
  });
});

describe("simulator faults", () => {
  let sim: Simulator;
  let id: string;
  before(async () => {
    sim = await startSimulator({ oneview: { members: 1 }, outlets: 2 });
    id = sim.deviceIds()[0] ?? "";
  });
  after(() => sim.close());

  it("refuse stops listening; clearing listens again on the same port", async () => {
    const port = sim.port;
    await sim.setFault("refuse");
    assert.equal(await transportError(request(`${sim.url}/api`)), "ECONNREFUSED");
    await sim.setFault(null);
    assert.equal(sim.port, port);
    assert.equal((await getJson(`${sim.url}/api/sys/oem`)).data, "GEI");
  });

  it("a fault can target one unit only", async () => {
    const member = sim.units[1];
    await sim.setFault("refuse", 1);
    try {
      assert.equal(await transportError(request(`${member?.url}/api`)), "ECONNREFUSED");
      assert.equal((await getJson(`${sim.url}/api/sys/oem`)).data, "GEI");
    } finally {
      await sim.setFault(null, 1);
    }
    assert.equal((await getJson(`${member?.url}/api/sys/oem`)).data, "GEI");
  });

  it("hang accepts and reads the request but never answers", async () => {
    await sim.setFault("hang");
    try {
      sim.clearRequests();
      const pending = transportError(request(`${sim.url}/api`, { timeoutMs: 300 }));
      await waitFor(() => sim.requests.length === 1, "the request to arrive", 5000);
      assert.equal(await pending, "timeout");
    } finally {
      await sim.setFault(null);
    }
  });

  it("slow:<ms> answers after the delay", async () => {
    await sim.setFault("slow:200");
    try {
      const started = Date.now();
      assert.equal((await getJson(`${sim.url}/api/sys/oem`)).data, "GEI");
      assert.ok(Date.now() - started >= 190);
    } finally {
      await sim.setFault(null);
    }
  });

  it("http500 answers HTTP 500", async () => {
    await sim.setFault("http500");
    try {
      const res = await request(`${sim.url}/api`);
      assert.equal(res.status, 500);
      assert.throws(() => JSON.parse(res.text) as unknown);
    } finally {
      await sim.setFault(null);
    }
  });

  it("truncated sends a complete HTTP answer with half the JSON", async () => {
    const full = await request(`${sim.url}/api`);
    await sim.setFault("truncated");
    try {
      const res = await request(`${sim.url}/api`);
      assert.equal(res.status, 200);
      assert.equal(Number(res.headers["content-length"]), res.body.length);
      assert.ok(res.body.length > 100 && res.body.length < full.body.length * 0.6);
      assert.ok(full.text.startsWith(res.text.slice(0, 20)));
      assert.throws(() => JSON.parse(res.text) as unknown, SyntaxError);
    } finally {
      await sim.setFault(null);
    }
  });

  it("wrong-shape sends a valid envelope whose data has the wrong shape", async () => {
    await sim.setFault("wrong-shape");
    try {
      const api = (await getJson(`${sim.url}/api`)).data as { dev: unknown; sys: unknown };
      assert.ok(Array.isArray(api.dev));
      assert.ok(api.sys);
      const ov = await getJson(`${sim.url}/oneview`);
      assert.equal(ov.retCode, 0);
      assert.ok(Array.isArray((ov.data as { host: unknown }).host));
      assert.equal(typeof (await getJson(`${sim.url}/api/conf/oneview/enabled`)).data, "string");
      const auth = await postJson(`${sim.url}/api/auth/admin`, {
        token: "",
        cmd: "login",
        data: { password: "admin" },
      });
      assert.equal(typeof (auth.data as { token: unknown }).token, "number");
    } finally {
      await sim.setFault(null);
    }
  });

  it("huge streams a body of more than 50 MB without Content-Length", async () => {
    await sim.setFault("huge");
    try {
      const { status, headers, bytes, head } = await new Promise<{
        status: number;
        headers: http.IncomingHttpHeaders;
        bytes: number;
        head: string;
      }>((resolve, reject) => {
        http
          .get(`${sim.url}/api`, { agent: false }, (res) => {
            let bytes = 0;
            let head = "";
            res.on("data", (c: Buffer) => {
              if (head.length < 30) head += c.toString("utf8", 0, Math.min(c.length, 30));
              bytes += c.length;
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, head }));
            res.on("error", reject);
          })
          .on("error", reject);
      });
      assert.equal(status, 200);
      assert.equal(headers["content-length"], undefined);
      assert.equal(headers["transfer-encoding"], "chunked");
      assert.ok(bytes > 50_000_000 && bytes >= HUGE_BODY_BYTES, `${bytes} bytes`);
      assert.match(head, /^\{"retCode":0/);
    } finally {
      await sim.setFault(null);
    }
  });

  it("faults apply to writes too, and clearing one restores normal answers", async () => {
    const token = await login(sim.url);
    await sim.setFault("http500");
    try {
      const res = await request(`${sim.url}/api/dev/${id}/outlet/0`, {
        body: { cmd: "control", token, data: { action: "off", delay: false } },
      });
      assert.equal(res.status, 500);
      assert.equal(sim.outlet(id, 0).state, "on", "a 500 changes nothing");
    } finally {
      await sim.setFault(null);
    }
    assert.equal((await getJson(`${sim.url}/api/sys/oem`)).data, "GEI");
  });

  it("rejects unknown faults", async () => {
    await assert.rejects(sim.setFault("melt" as "hang"), RangeError);
    await assert.rejects(sim.setFault("slow:soon" as "hang"), RangeError);
    await assert.rejects(sim.setFault("hang", 9), RangeError);
  });
});

describe("simulator close", () => {
  it("stops every port of a cluster", async () => {
    const sim = await startSimulator({ oneview: true });
    const urls = sim.units.map((u) => u.url);
    await sim.close();
    for (const url of urls) assert.equal(await transportError(request(`${url}/api`)), "ECONNREFUSED");
  });

  it("closes even while a request hangs", async () => {
    const sim = await startSimulator({});
    await sim.setFault("hang");
    const pending = transportError(request(`${sim.url}/api`));
    await waitFor(() => sim.requests.length === 1, "the request to arrive", 5000);
    await sim.close();
    assert.match(await pending, /^(ECONNRESET|socket hang up)$/);
  });
});
