/**
 * The lease store for a `Cluster` configuration: etcd (etcd.ts) or Kubernetes (kubernetes.ts,
 * imported only for that backend: @kubernetes/client-node is large). What is missing to reach the
 * engine is a {@link ConfigError} naming the key or variable, as for every configuration problem.
 */
import { readFile } from "node:fs/promises";
import { kubernetesTarget } from "../config/environment.js";
import { ConfigError } from "../config/errors.js";
import type { ClusterConfig } from "../config/schema.js";
import { ioReason, type Env } from "../config/secrets.js";
import { EtcdLeaseStore, RECORDS_MARK } from "./etcd.js";
import type { LeaseStore } from "./store.js";

export async function createLeaseStore(cluster: ClusterConfig, env: Env): Promise<LeaseStore> {
  if (cluster.Backend === "etcd") {
    const etcd = cluster.Etcd;
    const ca = await pem("Cluster.Etcd.CaFile", etcd.CaFile);
    const cert = await pem("Cluster.Etcd.CertFile", etcd.CertFile);
    const key = await pem("Cluster.Etcd.KeyFile", etcd.KeyFile);
    return new EtcdLeaseStore({
      endpoints: etcd.Endpoints,
      prefix: etcd.Prefix,
      ca,
      cert,
      key,
      username: etcd.Credentials.Username,
      password: etcd.Credentials.Password,
      // Half a retry period per endpoint (at most 1 s): a hung member leaves time for the next.
      attemptTimeoutMs: Math.min(1000, Math.max(200, (cluster.RetryPeriodSeconds * 1000) / 2)),
    });
  }

  // The pod's API server and namespace; the loader refused a configuration without them.
  const target = await kubernetesTarget(cluster, env);
  if ("problem" in target) throw new ConfigError(target.path.join("."), target.problem);
  const { KubernetesLeaseStore } = await import("./kubernetes.js");
  return new KubernetesLeaseStore({ ...target, leasePrefix: cluster.Kubernetes.LeasePrefix });
}

/**
 * The store of the records kept beside the leases (./records.ts): the same engine and credentials,
 * out of the leases' lists and watches, so that their size never weighs on the lease rounds. On
 * etcd the keys under `<Prefix>~records/` (within the prefix an installation's role is granted);
 * on Kubernetes the Leases `<LeasePrefix>-records-<name>`, labelled with `<LeasePrefix>-records`.
 */
export function createRecordStore(cluster: ClusterConfig, env: Env): Promise<LeaseStore> {
  return createLeaseStore(
    {
      ...cluster,
      Etcd: { ...cluster.Etcd, Prefix: `${cluster.Etcd.Prefix}${RECORDS_MARK}records/` },
      Kubernetes: { ...cluster.Kubernetes, LeasePrefix: `${cluster.Kubernetes.LeasePrefix}-records` },
    },
    env,
  );
}

/** A PEM file's text, or null when not configured; unreadable is a ConfigError naming `key`. */
async function pem(key: string, file: string | null): Promise<string | null> {
  if (file === null) return null;
  try {
    return await readFile(file, "utf8");
  } catch (cause) {
    throw new ConfigError(key, `cannot read ${file} (${ioReason(cause)})`);
  }
}
