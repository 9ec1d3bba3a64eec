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
import { MAX_RECORD_PAYLOAD_LENGTH, type LeaseStore } from "./store.js";

/**
 * What a lease store keeps: the leases, or records kept beside them (./records.ts: the energy
 * checkpoints per bucket; src/control/sequences.ts: the sequences' journal), which are larger and
 * stay out of the elector's lists and watches. On etcd their keys are under `<Prefix>~<kind>/`
 * (within the prefix an installation's role is granted; the leases' range stops at `~`); on
 * Kubernetes they are the Leases `<LeasePrefix>-<kind>-…`, labelled with `<LeasePrefix>-<kind>`.
 */
export type StoreKind = "leases" | "journal" | "records";

/** Longest text of a journal record (a sequence's head or a plan record), in characters. */
export const JOURNAL_PAYLOAD_MAX = 120_000;

/** The etcd prefix of the records of `kind` kept beside the leases' `prefix` (which ends with /). */
export const besidePrefix = (prefix: string, kind: Exclude<StoreKind, "leases">): string =>
  `${prefix}${RECORDS_MARK}${kind}/`;

/** The etcd prefix of the sequences' journal beside the leases' `prefix`. */
export const journalPrefix = (prefix: string): string => besidePrefix(prefix, "journal");

const MAX_PAYLOAD_OF: Record<Exclude<StoreKind, "leases">, number> = {
  journal: JOURNAL_PAYLOAD_MAX,
  records: MAX_RECORD_PAYLOAD_LENGTH,
};

export async function createLeaseStore(
  cluster: ClusterConfig,
  env: Env,
  kind: StoreKind = "leases",
): Promise<LeaseStore> {
  const beside = kind === "leases" ? {} : { maxPayload: MAX_PAYLOAD_OF[kind] };
  if (cluster.Backend === "etcd") {
    const etcd = cluster.Etcd;
    const ca = await pem("Cluster.Etcd.CaFile", etcd.CaFile);
    const cert = await pem("Cluster.Etcd.CertFile", etcd.CertFile);
    const key = await pem("Cluster.Etcd.KeyFile", etcd.KeyFile);
    return new EtcdLeaseStore({
      endpoints: etcd.Endpoints,
      prefix: kind === "leases" ? etcd.Prefix : besidePrefix(etcd.Prefix, kind),
      ...beside,
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
  return new KubernetesLeaseStore({
    ...target,
    leasePrefix:
      kind === "leases" ? cluster.Kubernetes.LeasePrefix : `${cluster.Kubernetes.LeasePrefix}-${kind}`,
    ...beside,
  });
}

/** The store of the records kept beside the leases (./records.ts: the energy checkpoints). */
export function createRecordStore(cluster: ClusterConfig, env: Env): Promise<LeaseStore> {
  return createLeaseStore(cluster, env, "records");
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
