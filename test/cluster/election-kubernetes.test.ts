/**
 * The same election algorithm on the Kubernetes engine: replicas built by `createCluster` from a
 * `Cluster` configuration (Backend kubernetes, the pod's environment), talking through the real
 * `@kubernetes/client-node` to the Lease API stand-in on a real 3-member etcd. Spread, handover,
 * takeover and once-only ids; and the start-up errors an operator has to act on.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { createCluster, FencingError } from "../../src/cluster/index.js";
import { ClusterPart } from "../../src/cluster/part.js";
import { KubernetesLeaseStore } from "../../src/cluster/kubernetes.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfigText } from "../../src/config/load.js";
import type { ClusterConfig } from "../../src/config/schema.js";
import { silentLogger } from "../../src/log.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { Fleet } from "../../testkit/cluster-fleet.js";
import { KubeLeaseApi } from "../../testkit/kube-lease-api.js";
import { waitFor } from "../../testkit/wait.js";

let etcd: EtcdCluster;
let api: KubeLeaseApi;
before(async () => {
  etcd = await EtcdCluster.start({ members: 3 });
  api = await KubeLeaseApi.start({ etcd: etcd.endpoints });
});
after(async () => {
  await api?.close();
  await etcd?.close();
});

let fleet: Fleet | null = null;
afterEach(async () => {
  const f = fleet;
  fleet = null;
  if (f === null) return;
  await f.close();
  assert.deepEqual(f.overlaps.slice(0, 5), [], "never two holders of one bucket at once");
});

/** The Cluster section as the service loads it, with a pod's environment. */
async function clusterConfig(extra: string, env: Record<string, string>): Promise<ClusterConfig> {
  const text = `Mqtt:\n  Connection: { Host: 127.0.0.1 }\nPdus:\n  rack-a:\n    Connection: { Host: 127.0.0.1 }\nCluster:\n  Enabled: true\n  LeaseDurationSeconds: 3\n  RenewDeadlineSeconds: 2\n  RetryPeriodSeconds: 0.5\n${extra}`;
  return (await parseConfigText(text, "test.yaml", env)).Cluster;
}

describe("the algorithm on Kubernetes Leases", () => {
  it("spreads, hands over on stop and takes over from a frozen replica", async () => {
    const f = new Fleet(
      () =>
        new KubernetesLeaseStore({
          server: api.url,
          serviceAccountDir: api.saDir,
          namespace: "pdu",
          leasePrefix: "fleet",
        }),
      { buckets: 16 },
    );
    fleet = f;
    await Promise.all(["pdu-bridge-a", "pdu-bridge-b", "pdu-bridge-c"].map((n) => f.add(n)));
    await f.waitBalanced(["pdu-bridge-a", "pdu-bridge-b", "pdu-bridge-c"]);
    await f.stop("pdu-bridge-c");
    await f.waitBalanced(["pdu-bridge-a", "pdu-bridge-b"], 5000);
    f.halt("pdu-bridge-b");
    await waitFor(
      () => f.get("pdu-bridge-a").status().buckets.length === 16,
      "the last replica to take every bucket",
      10_000,
    );
    // What the API saw: Lease writes only, every one a GET, list, watch, create, update or delete.
    const verbs = new Set(
      api.requests.map((r) => `${r.method} ${r.query.get("watch") === "true" ? "watch" : ""}`),
    );
    assert.deepEqual([...verbs].sort(), ["DELETE ", "GET ", "GET watch", "POST ", "PUT "]);
  });

  it("keeps once-only ids and reboot holds across a takeover", async () => {
    const env = { ...api.env, HOSTNAME: "pdu-bridge-x" };
    const config = await clusterConfig("  Buckets: 1\n  Kubernetes: { LeasePrefix: once }\n", env);
    const first = await createCluster(config, { logger: silentLogger(), env, ready: true });
    const second = await createCluster(
      { ...config, MemberName: "pdu-bridge-y" },
      { logger: silentLogger(), env, ready: true },
    );
    try {
      await first.start();
      await second.start();
      const holder = await waitFor(
        () => (first.holds("rack-a") ? first : second.holds("rack-a") ? second : null),
        "a holder",
      );
      const other = holder === first ? second : first;
      const hold = { key: "rack-a\u0000dev\u00000", ms: 20_000 };
      (await holder.beforeWrite("rack-a", { onceId: "reboot-7", hold })).done();
      holder.halt();
      await waitFor(() => other.holds("rack-a"), "the other replica to take over", 10_000);
      await assert.rejects(other.beforeWrite("rack-a", { onceId: "reboot-7" }), (e: unknown) => {
        assert.ok(e instanceof FencingError && e.reason === "once-used");
        return true;
      });
      // The outlet's reboot hold, read from the Lease's payload annotation: a new reboot is refused.
      await assert.rejects(other.beforeWrite("rack-a", { onceId: "reboot-8", hold }), (e: unknown) => {
        assert.ok(e instanceof FencingError && e.reason === "held", String(e));
        return true;
      });
    } finally {
      await Promise.allSettled([first.stop(), second.stop()]);
    }
  });
});

describe("the cluster part", () => {
  it("tells the bus when the members change: a replica joining, and one leaving", async () => {
    const env = { ...api.env, HOSTNAME: "pdu-bridge-m" };
    const config = await clusterConfig("  Buckets: 2\n  Kubernetes: { LeasePrefix: members }\n", env);
    const bus = new EventBus();
    const seen: string[][] = [];
    bus.listen(seen, { membersChanged: ({ members }) => seen.push([...members].sort()) });
    const part = new ClusterPart(
      await createCluster(config, { logger: silentLogger(), env }),
      bus,
      silentLogger(),
      () => true,
    );
    const other = await createCluster(
      { ...config, MemberName: "pdu-bridge-n" },
      { logger: silentLogger(), env, ready: true },
    );
    try {
      await part.start();
      await waitFor(() => seen.some((m) => m.length === 1), "the part's own membership told");
      await other.start();
      await waitFor(
        () => seen.some((m) => m.join() === "pdu-bridge-m,pdu-bridge-n"),
        "the second replica's joining told",
        10_000,
      );
      await other.stop();
      const joined = seen.findIndex((m) => m.length === 2);
      await waitFor(
        () => seen.slice(joined).some((m) => m.join() === "pdu-bridge-m"),
        "the second replica's leaving told",
        10_000,
      );
    } finally {
      await Promise.allSettled([part.stop(), other.stop()]);
    }
  });
});

describe("setting up the engine", () => {
  it("takes the namespace from the service-account directory, and says what is missing", async () => {
    const env = { ...api.env, HOSTNAME: "pdu-bridge-z" };
    const cluster = await createCluster(await clusterConfig("", env), { logger: silentLogger(), env });
    try {
      assert.equal(cluster.status().engine, "kubernetes pdu/pdu-bridge");
    } finally {
      await cluster.stop();
    }

    // The loader refuses these configurations outside a pod (test/config/one-rule-set.test.ts); the
    // engine, built from the same functions, says the same where the environment changed since.
    const inPod = await clusterConfig("", env);
    const outside = { HOSTNAME: "pdu-bridge-z" };
    await assert.rejects(createCluster(inPod, { logger: silentLogger(), env: outside }), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.key, "Cluster.Backend");
      assert.match(e.message, /KUBERNETES_SERVICE_HOST is not set/);
      return true;
    });

    const empty = await mkdtemp(join(tmpdir(), "pdu-bridge-no-sa-"));
    try {
      const noNamespace = { ...env, SERVICE_K8S_SA_DIR: empty };
      await assert.rejects(
        createCluster(inPod, { logger: silentLogger(), env: noNamespace }),
        (e: unknown) => {
          assert.ok(e instanceof ConfigError);
          assert.equal(e.key, "Cluster.Kubernetes.Namespace");
          assert.match(e.message, /cannot be read from .*namespace \(no such file\)/);
          return true;
        },
      );
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it("builds the etcd engine from the configuration", async () => {
    const env = { HOSTNAME: "pdu-bridge-e" };
    const config = await clusterConfig(
      `  Backend: etcd\n  Etcd:\n    Endpoints: [${etcd.endpoints.join(", ")}]\n    Prefix: /from-config/\n`,
      env,
    );
    const cluster = await createCluster(config, {
      logger: silentLogger(),
      env,
      ready: true,
      instanceIds: ["rack-a"],
    });
    try {
      await cluster.start();
      await waitFor(() => cluster.holds("rack-a"), "the only replica to hold its bucket", 10_000);
      const status = cluster.status();
      assert.equal(status.member, "pdu-bridge-e");
      assert.match(status.engine, /^etcd http:\/\/127\.0\.0\.1:\d+,.* \/from-config\/$/);
      assert.deepEqual(status.instances, ["rack-a"]);
      assert.equal(status.reachable, true);
    } finally {
      await cluster.stop();
    }
  });
});
