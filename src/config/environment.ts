/**
 * The rules of the configuration that read the machine the service runs on rather than the file:
 * the pod the Kubernetes backend needs (its variables and service-account namespace) and the
 * address this replica advertises to the others. The loader applies them with every other rule,
 * so that check-config, run where the service runs, refuses what start would; the cluster's
 * engine and the App build from the same functions.
 */
import { readFile } from "node:fs/promises";
import { networkInterfaces, type NetworkInterfaceInfo } from "node:os";
import { join } from "node:path";
import type { KeyPath } from "./document.js";
import { peerNetworks } from "./peer-networks.js";
import type { ClusterConfig, Config } from "./schema.js";
import { ioReason, type Env } from "./secrets.js";

/** Where a pod's service-account token, CA and namespace are (SERVICE_K8S_SA_DIR overrides it). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** The host's network interfaces, as `os.networkInterfaces()` returns them. */
export type Interfaces = NodeJS.Dict<NetworkInterfaceInfo[]>;

/** A rule's problem before it gets its file and line: the key, and the key whose line to show. */
export interface EnvironmentProblem {
  readonly path: KeyPath;
  readonly problem: string;
  readonly linePath?: KeyPath;
}

/** Where the Kubernetes backend finds the API server and its Leases. */
export interface KubernetesTarget {
  readonly server: string;
  readonly serviceAccountDir: string;
  readonly namespace: string;
}

const nonEmpty = (value: string | undefined): string | undefined => (value === "" ? undefined : value);

/**
 * The Kubernetes backend's API server and namespace from the pod's environment, or what is missing
 * to reach them (the service starts only inside a pod with this backend).
 */
export async function kubernetesTarget(
  cluster: Pick<ClusterConfig, "Kubernetes">,
  env: Env,
): Promise<KubernetesTarget | EnvironmentProblem> {
  const serviceAccountDir = nonEmpty(env.SERVICE_K8S_SA_DIR) ?? SERVICE_ACCOUNT_DIR;
  const host = nonEmpty(env.KUBERNETES_SERVICE_HOST);
  if (host === undefined) {
    return {
      path: ["Cluster", "Backend"],
      problem:
        "is kubernetes, but KUBERNETES_SERVICE_HOST is not set: the Kubernetes backend works inside a pod (use etcd elsewhere)",
      linePath: ["Cluster", "Enabled"],
    };
  }
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${nonEmpty(env.KUBERNETES_SERVICE_PORT) ?? "443"}`;
  let namespace = cluster.Kubernetes.Namespace;
  if (namespace === null) {
    const file = join(serviceAccountDir, "namespace");
    try {
      namespace = (await readFile(file, "utf8")).trim();
    } catch (cause) {
      return {
        path: ["Cluster", "Kubernetes", "Namespace"],
        problem: `not set, and the pod's namespace cannot be read from ${file} (${ioReason(cause)})`,
        linePath: ["Cluster", "Enabled"],
      };
    }
  }
  return { server, serviceAccountDir, namespace };
}

/**
 * Where the other replicas reach this replica's REST API (in its member lease, for forwarded
 * control): `Cluster.AdvertiseUrl`, else `Api.Bind` when it names one address, else the host's
 * first non-loopback IPv4 address (the pod's IP in Kubernetes), with `Api.Port`; null without the
 * API, or when there is no address to give.
 */
export function advertisedApiUrl(
  config: Config,
  interfaces: Interfaces = networkInterfaces(),
): string | null {
  if (!config.Api.Enabled) return null;
  if (config.Cluster.AdvertiseUrl !== null) return new URL(config.Cluster.AdvertiseUrl).origin;
  const tls = config.Api.Tls.CertFile !== null && config.Api.Tls.KeyFile !== null;
  const bind = config.Api.Bind;
  const any = bind === "0.0.0.0" || bind === "::" || bind === "";
  const host = any ? firstIPv4(interfaces) : bind;
  if (host === null || config.Api.Port === 0) return null;
  return `${tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${config.Api.Port}`;
}

function firstIPv4(interfaces: Interfaces): string | null {
  for (const addresses of Object.values(interfaces)) {
    for (const a of addresses ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return null;
}

/**
 * The rules of `Cluster.Enabled` that read the machine: the Kubernetes backend inside a pod, and an
 * advertised API address the other replicas may send requests to (an `AdvertiseUrl` outside
 * `Cluster.PeerNetworks` is a rule of the file's, checked with the other `Cluster` rules).
 */
export async function environmentProblems(
  config: Config,
  env: Env,
  interfaces: Interfaces = networkInterfaces(),
): Promise<EnvironmentProblem[]> {
  const cluster = config.Cluster;
  if (!cluster.Enabled) return [];
  const problems: EnvironmentProblem[] = [];
  if (cluster.Backend === "kubernetes") {
    const target = await kubernetesTarget(cluster, env);
    if ("problem" in target) problems.push(target);
  }
  const url = cluster.AdvertiseUrl === null ? advertisedApiUrl(config, interfaces) : null;
  if (url !== null && !peerNetworks(cluster.PeerNetworks).allows(url)) {
    problems.push({
      path: ["Cluster", "PeerNetworks"],
      problem: `does not hold this replica's API address ${url} (from Api.Bind or the host's first IPv4 address): add its network, or set Cluster.AdvertiseUrl to an address within it`,
      linePath: ["Cluster", "Enabled"],
    });
  }
  return problems;
}
