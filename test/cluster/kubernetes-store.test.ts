/**
 * The Kubernetes engine of the lease seam through the real `@kubernetes/client-node`, against the
 * Lease API stand-in (testkit/kube-lease-api.ts) storing in a real 3-member etcd: the seam's
 * contract, what the Leases look like to other tools, other Leases of the namespace left alone, and
 * the errors an operator has to act on.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KubernetesLeaseStore, PAYLOAD_ANNOTATION, PREFIX_LABEL } from "../../src/cluster/kubernetes.js";
import { LeaseStoreError } from "../../src/cluster/store.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { KubeLeaseApi } from "../../testkit/kube-lease-api.js";
import { leaseStoreContract, record } from "../../testkit/lease-store-contract.js";

const signal = () => AbortSignal.timeout(10_000);

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

const store = (leasePrefix: string, namespace = "pdu") =>
  new KubernetesLeaseStore({ server: api.url, serviceAccountDir: api.saDir, namespace, leasePrefix });

leaseStoreContract("Kubernetes (client-node, Lease API stand-in on etcd)", () => {
  const a = store("contract");
  const b = store("contract");
  return Promise.resolve({ a, b, close: () => Promise.all([a.close(), b.close()]).then(() => undefined) });
});

describe("Kubernetes engine details", () => {
  it("writes a Lease other tools read: prefixed name, label, spec fields in MicroTime, payload annotation", async () => {
    const s = store("shape");
    try {
      await s.create("bucket-3", record("alpha/1", { transitions: 2, payload: '{"once":[]}' }), signal());
      const response = await fetch(
        `${api.url}/apis/coordination.k8s.io/v1/namespaces/pdu/leases/shape-bucket-3`,
        {
          headers: { authorization: `Bearer ${api.token}` },
          // The stand-in's certificate is the test process's own: trust it for this one request.
          dispatcher: await trusting(),
        } as RequestInit,
      );
      const lease = (await response.json()) as {
        metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
        spec: Record<string, unknown>;
      };
      assert.equal(lease.metadata.name, "shape-bucket-3");
      assert.equal(lease.metadata.labels[PREFIX_LABEL], "shape");
      assert.equal(lease.metadata.annotations[PAYLOAD_ANNOTATION], '{"once":[]}');
      assert.deepEqual(lease.spec, {
        holderIdentity: "alpha/1",
        leaseDurationSeconds: 15,
        acquireTime: "2026-01-02T03:04:05.123000Z",
        renewTime: "2026-01-02T03:04:06.654000Z",
        leaseTransitions: 2,
      });
    } finally {
      await s.close();
    }
  });

  it("lists and watches only its own prefix's Leases", async () => {
    const mine = store("mine");
    const theirs = store("theirs");
    try {
      await mine.create("member-a", record("a/1"), signal());
      await theirs.create("member-b", record("b/1"), signal());
      const list = await mine.list(signal());
      assert.deepEqual(
        list.leases.map((l) => l.name),
        ["member-a"],
      );
    } finally {
      await Promise.all([mine.close(), theirs.close()]);
    }
  });

  it("names the cause when the token is refused", async () => {
    const s = store("denied");
    const tokenFile = join(api.saDir, "token");
    try {
      // A fresh store reads the token file on its first request.
      await writeFile(tokenFile, "not-the-token");
      await assert.rejects(s.list(signal()), (error: unknown) => {
        assert.ok(error instanceof LeaseStoreError, String(error));
        assert.match(error.message, /kubernetes pdu\/denied: list leases: HTTP 401, unauthorized/);
        return true;
      });
    } finally {
      await writeFile(tokenFile, api.token);
      await s.close();
    }
  });

  it("is a store error, not a crash, when the API server cannot be reached", async () => {
    const s = new KubernetesLeaseStore({
      server: "https://127.0.0.1:1",
      serviceAccountDir: api.saDir,
      namespace: "pdu",
      leasePrefix: "gone",
    });
    try {
      await assert.rejects(s.get("member-a", signal()), LeaseStoreError);
    } finally {
      await s.close();
    }
  });
});

/** An undici dispatcher trusting the stand-in's self-signed certificate. */
async function trusting(): Promise<unknown> {
  const { Agent } = await import("undici");
  const { selfSignedCertificate } = await import("../../src/simulator/cert.js");
  return new Agent({ connect: { ca: (await selfSignedCertificate()).cert } });
}
