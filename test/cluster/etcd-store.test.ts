/**
 * The etcd engine of the lease seam against a real 3-member etcd (and single members for TLS and
 * auth): the seam's contract, failover when a member is killed, values it cannot read, TLS with a
 * private CA, and user name and password (with the token lost when etcd restarts).
 */
import assert from "node:assert/strict";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import { LeaseStoreError } from "../../src/cluster/store.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { leaseStoreContract, record } from "../../testkit/lease-store-contract.js";
import { waitFor } from "../../testkit/wait.js";

const signal = () => AbortSignal.timeout(10_000);

let cluster: EtcdCluster;
before(async () => {
  cluster = await EtcdCluster.start({ members: 3 });
});
after(async () => {
  await cluster?.close();
});

leaseStoreContract("etcd (3 members)", () => {
  const options = { endpoints: cluster.endpoints, prefix: "/contract/" };
  const a = new EtcdLeaseStore(options);
  // The second client starts at another member: both see one linearizable store.
  const b = new EtcdLeaseStore({ ...options, endpoints: [...cluster.endpoints].reverse() });
  return Promise.resolve({ a, b, close: () => Promise.all([a.close(), b.close()]).then(() => undefined) });
});

describe("etcd engine details", () => {
  it("skips keys under the prefix that are not leases, and reads a foreign value as record null", async () => {
    const store = new EtcdLeaseStore({ endpoints: cluster.endpoints, prefix: "/foreign/" });
    try {
      const put = (key: string, value: string) =>
        store.gateway.txn(
          {
            compare: [],
            success: [
              {
                request_put: {
                  key: Buffer.from(key).toString("base64"),
                  value: Buffer.from(value).toString("base64"),
                },
              },
            ],
          },
          signal(),
        );
      await put("/foreign/not a lease name", "{}");
      await put("/foreign/bucket-1", "not json");
      await put("/foreign/bucket-2", JSON.stringify({ ...record("x/1"), transitions: -1 }));
      await put("/foreignx/bucket-3", JSON.stringify(record("x/1")));
      const list = await store.list(signal());
      assert.deepEqual(
        list.leases.map((l) => [l.name, l.record]),
        [
          ["bucket-1", null],
          ["bucket-2", null],
        ],
      );
    } finally {
      await store.close();
    }
  });

  it("goes on through the next endpoint when the one it used is killed", async () => {
    // The store asks a follower first, so that killing it needs no raft election to go on.
    const leader = await cluster.leader();
    const follower = (leader + 1) % cluster.size;
    const endpoints = [cluster.endpoints[follower]!, ...cluster.endpoints.filter((_, i) => i !== follower)];
    const store = new EtcdLeaseStore({ endpoints, prefix: "/failover/", attemptTimeoutMs: 1500 });
    try {
      const created = await store.create("lease", record("alpha/1"), signal());
      const first = store.gateway.current;
      assert.equal(first, cluster.endpoints[follower]);
      const index = follower;
      await cluster.stop(index);
      try {
        const updated = await store.update(
          "lease",
          record("alpha/1", { transitions: 1 }),
          created.version,
          signal(),
        );
        assert.notEqual(store.gateway.current, first);
        assert.equal((await store.get("lease", signal()))?.version, updated.version);
      } finally {
        cluster.restart(index);
        await cluster.waitHealthy();
      }
    } finally {
      await store.close();
    }
  });

  it("says which endpoints failed when none answers", async () => {
    const store = new EtcdLeaseStore({
      endpoints: ["http://127.0.0.1:1", "http://[::1]:1"],
      prefix: "/none/",
      attemptTimeoutMs: 500,
    });
    try {
      await assert.rejects(store.list(signal()), (error: unknown) => {
        assert.ok(error instanceof LeaseStoreError);
        assert.match(
          error.message,
          /no etcd endpoint answered \/v3\/kv\/range \(http:\/\/127\.0\.0\.1:1: .*http:\/\/\[::1\]:1: /,
        );
        return true;
      });
    } finally {
      await store.close();
    }
  });
});

describe("etcd over TLS with a private CA", () => {
  let tls: EtcdCluster;
  before(async () => {
    tls = await EtcdCluster.start({ members: 1, tls: true });
  });
  after(async () => {
    await tls?.close();
  });

  it("works with the CA and refuses without it", async () => {
    const trusted = new EtcdLeaseStore({ endpoints: tls.endpoints, prefix: "/tls/", ca: tls.ca });
    const untrusted = new EtcdLeaseStore({
      endpoints: tls.endpoints,
      prefix: "/tls/",
      attemptTimeoutMs: 1000,
    });
    try {
      assert.match(tls.endpoints[0]!, /^https:/);
      await trusted.create("lease", record("alpha/1"), signal());
      assert.equal((await trusted.get("lease", signal()))?.record?.holder, "alpha/1");
      await assert.rejects(untrusted.get("lease", signal()), /certificate|self.signed/i);
    } finally {
      await Promise.all([trusted.close(), untrusted.close()]);
    }
  });
});

describe("etcd requiring client certificates (--client-cert-auth)", () => {
  let mtls: EtcdCluster;
  before(async () => {
    mtls = await EtcdCluster.start({ members: 1, clientCerts: true });
  });
  after(async () => {
    await mtls?.close();
  });

  it("works with the client certificate and key, and is refused without them", async () => {
    const client = mtls.clientCertificate!;
    const withCert = new EtcdLeaseStore({
      endpoints: mtls.endpoints,
      prefix: "/mtls/",
      ca: mtls.ca,
      cert: client.cert,
      key: client.key,
    });
    const without = new EtcdLeaseStore({ endpoints: mtls.endpoints, prefix: "/mtls/", ca: mtls.ca });
    try {
      const created = await withCert.create("lease", record("alpha/1"), signal());
      assert.equal((await withCert.get("lease", signal()))?.version, created.version);
      await assert.rejects(without.get("lease", signal()), LeaseStoreError);
    } finally {
      await Promise.all([withCert.close(), without.close()]);
    }
  });
});

describe("etcd with authentication", () => {
  let auth: EtcdCluster;
  before(async () => {
    auth = await EtcdCluster.start({ members: 1 });
    await auth.enableAuth("root-password-1");
  });
  after(async () => {
    await auth?.close();
  });

  it("authenticates with the user name and password, and again after etcd forgot the token", async () => {
    const store = new EtcdLeaseStore({
      endpoints: auth.endpoints,
      prefix: "/auth/",
      username: "root",
      password: "root-password-1",
    });
    try {
      const created = await store.create("lease", record("alpha/1"), signal());
      // A restarted member has lost every simple token: the next request is refused once, then the
      // store asks for a new token and goes on.
      await auth.stop(0);
      auth.restart(0);
      await auth.waitHealthy();
      const updated = await store.update(
        "lease",
        record("alpha/1", { transitions: 1 }),
        created.version,
        signal(),
      );
      assert.equal((await store.get("lease", signal()))?.version, updated.version);
    } finally {
      await store.close();
    }
  });

  it("a slow authentication (bcrypt on a busy member) outlasting each request's deadline still gets a token", async () => {
    // A proxy in front of the member that holds every authentication answer for 600 ms: longer than
    // the store's per-request attempt (250 ms, as a 0.5 s RetryPeriod gives).
    const upstream = new URL(auth.endpoints[0]!);
    const proxy = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (c: Buffer) => chunks.push(c));
      request.on("end", () => {
        const forward = httpRequest(
          {
            host: upstream.hostname,
            port: upstream.port,
            path: request.url,
            method: request.method,
            headers: request.headers,
          },
          (answer) => {
            const delay = request.url === "/v3/auth/authenticate" ? 600 : 0;
            setTimeout(() => {
              response.writeHead(answer.statusCode ?? 502, answer.headers);
              answer.pipe(response);
            }, delay);
          },
        );
        forward.on("error", () => response.destroy());
        forward.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const { port } = proxy.address() as AddressInfo;
    const store = new EtcdLeaseStore({
      endpoints: [`http://127.0.0.1:${port}`],
      prefix: "/slow-auth/",
      username: "root",
      password: "root-password-1",
      attemptTimeoutMs: 250,
    });
    try {
      // Rounds every half second, each with a 1 s deadline: one of the first few has the token.
      const listed = await waitFor(
        async () => {
          try {
            return await store.list(AbortSignal.timeout(1000));
          } catch {
            return undefined;
          }
        },
        "a list with the token",
        10_000,
        500,
      );
      assert.ok(Array.isArray(listed.leases));
    } finally {
      await store.close();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("refuses without credentials and with a wrong password, naming the variables", async () => {
    const anonymous = new EtcdLeaseStore({ endpoints: auth.endpoints, prefix: "/auth/" });
    const wrong = new EtcdLeaseStore({
      endpoints: auth.endpoints,
      prefix: "/auth/",
      username: "root",
      password: "not-the-password",
    });
    try {
      await assert.rejects(anonymous.get("lease", signal()), (error: unknown) => {
        assert.ok(error instanceof LeaseStoreError, String(error));
        assert.match(error.message, /user name is empty|permission denied|invalid auth token/);
        return true;
      });
      await assert.rejects(wrong.get("lease", signal()), (error: unknown) => {
        assert.ok(error instanceof LeaseStoreError, String(error));
        assert.match(
          error.message,
          /refused the credentials of SERVICE_ETCD_USERNAME\/SERVICE_ETCD_PASSWORD/,
        );
        assert.ok(!error.message.includes("not-the-password"));
        return true;
      });
    } finally {
      await Promise.all([anonymous.close(), wrong.close()]);
    }
  });
});
