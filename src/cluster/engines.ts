/**
 * The lease store for a `Cluster` configuration: etcd (etcd.ts) or Kubernetes (kubernetes.ts,
 * imported only for that backend: @kubernetes/client-node is large). What is missing to reach the
 * engine is a {@link ConfigError} naming the key or variable, as for every configuration problem.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../config/errors.js";
import type { ClusterConfig } from "../config/schema.js";
import { ioReason, type Env } from "../config/secrets.js";
import { EtcdLeaseStore } from "./etcd.js";
import type { LeaseStore } from "./store.js";

/** Where a pod's service-account token, CA and namespace are (SERVICE_K8S_SA_DIR overrides it). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Where a lease store keeps its records: the leases, or the sequences' journal (src/control/
 * sequences.ts), which sits beside them (etcd: the prefix `<Prefix without its last />-journal/`;
 * Kubernetes: Leases `<LeasePrefix>-journal-…` with that label value), so that the elector's lists
 * and watches never see it, and whose records are larger.
 */
export type StoreKind = "leases" | "journal";

/** Longest text of a journal record (a sequence's head or a plan record), in characters. */
export const JOURNAL_PAYLOAD_MAX = 120_000;

/** The etcd prefix of the journal beside the leases' `prefix` (which starts and ends with /). */
export const journalPrefix = (prefix: string): string =>
  prefix === "/" ? "/pdu-bridge-journal/" : `${prefix.slice(0, -1)}-journal/`;

export async function createLeaseStore(
  cluster: ClusterConfig,
  env: Env,
  kind: StoreKind = "leases",
): Promise<LeaseStore> {
  const journal = kind === "journal" ? { maxPayload: JOURNAL_PAYLOAD_MAX } : {};
  if (cluster.Backend === "etcd") {
    const etcd = cluster.Etcd;
    const ca = await pem("Cluster.Etcd.CaFile", etcd.CaFile);
    const cert = await pem("Cluster.Etcd.CertFile", etcd.CertFile);
    const key = await pem("Cluster.Etcd.KeyFile", etcd.KeyFile);
    return new EtcdLeaseStore({
      endpoints: etcd.Endpoints,
      prefix: kind === "journal" ? journalPrefix(etcd.Prefix) : etcd.Prefix,
      ...journal,
      ca,
      cert,
      key,
      username: etcd.Credentials.Username,
      password: etcd.Credentials.Password,
      // Half a retry period per endpoint (at most 1 s): a hung member leaves time for the next.
      attemptTimeoutMs: Math.min(1000, Math.max(200, (cluster.RetryPeriodSeconds * 1000) / 2)),
    });
  }

  const saDir = nonEmpty(env.SERVICE_K8S_SA_DIR) ?? SERVICE_ACCOUNT_DIR;
  const host = nonEmpty(env.KUBERNETES_SERVICE_HOST);
  if (host === undefined) {
    throw new ConfigError(
      "Cluster.Backend",
      "is kubernetes, but KUBERNETES_SERVICE_HOST is not set: the Kubernetes backend works inside a pod (use etcd elsewhere)",
    );
  }
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${nonEmpty(env.KUBERNETES_SERVICE_PORT) ?? "443"}`;
  let namespace = cluster.Kubernetes.Namespace;
  if (namespace === null) {
    const file = join(saDir, "namespace");
    try {
      namespace = (await readFile(file, "utf8")).trim();
    } catch (cause) {
      throw new ConfigError(
        "Cluster.Kubernetes.Namespace",
        `not set, and the pod's namespace cannot be read from ${file} (${ioReason(cause)})`,
      );
    }
  }
  const { KubernetesLeaseStore } = await import("./kubernetes.js");
  return new KubernetesLeaseStore({
    server,
    serviceAccountDir: saDir,
    namespace,
    leasePrefix:
      kind === "journal" ? `${cluster.Kubernetes.LeasePrefix}-journal` : cluster.Kubernetes.LeasePrefix,
    ...journal,
  });
}

const nonEmpty = (value: string | undefined): string | undefined => (value === "" ? undefined : value);

/** A PEM file's text, or null when not configured; unreadable is a ConfigError naming `key`. */
async function pem(key: string, file: string | null): Promise<string | null> {
  if (file === null) return null;
  try {
    return await readFile(file, "utf8");
  } catch (cause) {
    throw new ConfigError(key, `cannot read ${file} (${ioReason(cause)})`);
  }
}
