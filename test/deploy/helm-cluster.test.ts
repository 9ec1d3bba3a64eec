/**
 * The chart's replicas: `replicaCount` above 1 (or `cluster.enabled`) turns the service's Cluster on
 * with the Kubernetes backend, with the Role for Leases, a PodDisruptionBudget, spread across nodes,
 * a rolling update that joins before it leaves, and each replica named after its pod. One replica
 * without it renders as before.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseConfigText } from "../../src/config/load.js";
import { CHART_DIR, helmUnavailable, renderChart, runHelm, type K8sObject } from "../../testkit/helm.js";

const skip = await helmUnavailable();
if (skip !== undefined) process.stderr.write(`SKIPPING the Helm cluster tests: ${skip}\n`);

const CLUSTER_VALUES = ["-f", `${CHART_DIR}/ci/cluster-values.yaml`];

interface PodSpec {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  containers: {
    env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  }[];
  topologySpreadConstraints?: {
    maxSkew: number;
    topologyKey: string;
    whenUnsatisfiable: string;
    labelSelector: { matchLabels: Record<string, string> };
  }[];
}
interface Deployment extends K8sObject {
  spec: {
    replicas: number;
    strategy: { type: string; rollingUpdate?: { maxUnavailable: number; maxSurge: number } };
    template: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: PodSpec;
    };
  };
}

const ofKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
function one<T extends K8sObject = K8sObject>(objects: K8sObject[], kind: string, name?: string): T {
  const found = ofKind(objects, kind).filter((o) => name === undefined || o.metadata.name === name);
  assert.equal(
    found.length,
    1,
    `expected one ${kind}${name === undefined ? "" : ` ${name}`}, got ${found.length}`,
  );
  return found[0] as T;
}
const deployment = (objects: K8sObject[]) => one<Deployment>(objects, "Deployment");
const env = (objects: K8sObject[], name: string) =>
  deployment(objects).spec.template.spec.containers[0]!.env?.find((e) => e.name === name);
const configText = (objects: K8sObject[]) =>
  (one(objects, "ConfigMap").data as Record<string, string>)["config.yaml"]!;

/** A pod's network interfaces: the rules read the address this replica advertises from them. */
const POD_INTERFACES = {
  eth0: [
    {
      address: "10.244.1.7",
      netmask: "255.255.255.0",
      family: "IPv4" as const,
      mac: "02:00:00:00:00:07",
      internal: false,
      cidr: "10.244.1.7/24",
    },
  ],
};

describe("Helm chart: replicas and the cluster", { skip }, () => {
  let single: K8sObject[];
  /** The service-account directory a pod has (its namespace file). */
  let serviceAccount: string;
  /** What a pod runs with: the ConfigMap's text, the pod's variables and its interfaces. */
  const inPod = (text: string, variables: Record<string, string>) =>
    parseConfigText(
      text,
      "chart",
      { KUBERNETES_SERVICE_HOST: "10.96.0.1", SERVICE_K8S_SA_DIR: serviceAccount, ...variables },
      { source: "kubernetes", interfaces: POD_INTERFACES },
    );

  before(async () => {
    serviceAccount = await mkdtemp(join(tmpdir(), "pdu-bridge-sa-"));
    await writeFile(join(serviceAccount, "namespace"), "pdu\n");
  });
  after(async () => {
    await rm(serviceAccount, { recursive: true, force: true });
  });
  let three: K8sObject[];
  before(async () => {
    [single, three] = await Promise.all([renderChart(), renderChart(CLUSTER_VALUES)]);
  });

  it("one replica without the cluster renders as before: Recreate, no Cluster, no Lease RBAC", async () => {
    const d = deployment(single);
    assert.equal(d.spec.replicas, 1);
    assert.equal(d.spec.strategy.type, "Recreate");
    assert.equal(d.spec.template.spec.automountServiceAccountToken, false);
    assert.equal(d.spec.template.spec.topologySpreadConstraints, undefined);
    assert.equal(env(single, "HOSTNAME"), undefined);
    assert.deepEqual(ofKind(single, "PodDisruptionBudget"), []);
    assert.deepEqual(ofKind(single, "Role"), []);
    assert.doesNotMatch(configText(single), /Cluster/);
    const config = await parseConfigText(configText(single), "chart", {}, { source: "kubernetes" });
    assert.equal(config.Cluster.Enabled, false);
  });

  it("replicaCount 3: Cluster on with the Kubernetes backend, each replica named after its pod", async () => {
    const d = deployment(three);
    assert.equal(d.spec.replicas, 3);
    assert.deepEqual(env(three, "HOSTNAME")?.valueFrom?.fieldRef?.fieldPath, "metadata.name");
    // What a pod runs with: the ConfigMap, its own name as HOSTNAME, the Secret's variables.
    const config = await inPod(configText(three), { HOSTNAME: "release-pdu-bridge-5d8c7b9f4-x2kqp" });
    assert.equal(config.Cluster.Enabled, true);
    assert.equal(config.Cluster.Backend, "kubernetes");
    assert.equal(config.Cluster.Buckets, 32, "the user's Cluster keys are kept");
    assert.equal(config.Cluster.MemberName, "release-pdu-bridge-5d8c7b9f4-x2kqp");
    assert.equal(config.Cluster.Kubernetes.Namespace, null, "the Leases live in the pod's own namespace");
    assert.equal(
      d.spec.template.spec.automountServiceAccountToken,
      true,
      "the Kubernetes backend needs the token",
    );
  });

  it("a Role for Leases (get/list/watch/create/update/patch/delete) bound to the pods' service account", () => {
    const role = one(three, "Role");
    assert.deepEqual(role.rules, [
      {
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
      },
    ]);
    const binding = one(three, "RoleBinding");
    assert.deepEqual(binding.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: role.metadata.name,
    });
    const serviceAccount = deployment(three).spec.template.spec.serviceAccountName;
    assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: serviceAccount, namespace: "pdu" }]);
    assert.equal(one(three, "ServiceAccount").metadata.name, serviceAccount);
  });

  it("a PodDisruptionBudget and spread across nodes, both selecting the pods", () => {
    const podLabels = deployment(three).spec.template.metadata.labels;
    const pdb = one(three, "PodDisruptionBudget");
    const pdbSpec = pdb.spec as { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
    assert.equal(pdb.apiVersion, "policy/v1");
    assert.equal(pdbSpec.maxUnavailable, 1);
    for (const [k, v] of Object.entries(pdbSpec.selector.matchLabels)) assert.equal(podLabels[k], v);
    const spread = deployment(three).spec.template.spec.topologySpreadConstraints;
    assert.equal(spread?.length, 1);
    assert.equal(spread[0]!.topologyKey, "kubernetes.io/hostname");
    assert.equal(spread[0]!.maxSkew, 1);
    assert.equal(spread[0]!.whenUnsatisfiable, "ScheduleAnyway");
    for (const [k, v] of Object.entries(spread[0]!.labelSelector.matchLabels)) assert.equal(podLabels[k], v);
  });

  it("rolls one pod at a time, the new one joining before the old one leaves", () => {
    assert.deepEqual(deployment(three).spec.strategy, {
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: 0, maxSurge: 1 },
    });
  });

  it("cluster.enabled turns it on for one replica; scaling changes the rendered configuration's checksum", async () => {
    const standby = await renderChart([
      ...CLUSTER_VALUES,
      "--set",
      "replicaCount=1",
      "--set",
      "cluster.enabled=true",
    ]);
    assert.equal(deployment(standby).spec.replicas, 1);
    assert.equal(ofKind(standby, "Role").length, 1);
    assert.match(configText(standby), /Enabled: true/);
    const checksum = (o: K8sObject[]) =>
      deployment(o).spec.template.metadata.annotations?.["checksum/config"];
    const five = await renderChart([...CLUSTER_VALUES, "--set", "replicaCount=5"]);
    assert.equal(checksum(five), checksum(three), "the same configuration for 3 and 5 replicas");
    assert.notEqual(checksum(single), checksum(three));
  });

  it("with the etcd backend: no Lease RBAC and no token", async () => {
    const objects = await renderChart([
      ...CLUSTER_VALUES,
      "--set",
      "config.Cluster.Backend=etcd",
      "--set",
      "config.Cluster.Etcd.Endpoints={https://etcd-0.etcd:2379}",
    ]);
    assert.deepEqual(ofKind(objects, "Role"), []);
    assert.equal(deployment(objects).spec.template.spec.automountServiceAccountToken, false);
    const config = await parseConfigText(
      configText(objects),
      "chart",
      { HOSTNAME: "p-1" },
      { source: "kubernetes" },
    );
    assert.equal(config.Cluster.Backend, "etcd");
    assert.deepEqual(config.Cluster.Etcd.Endpoints, ["https://etcd-0.etcd:2379"]);
  });

  it("the replicas' secret with the API on: made once by the chart (or taken from a Secret of yours), passed as SERVICE_CLUSTER_SECRET", async () => {
    const api = ["--set", "config.Api.Enabled=true"];
    const [made, theirs, withoutApi] = await Promise.all([
      renderChart([...CLUSTER_VALUES, ...api]),
      renderChart([...CLUSTER_VALUES, ...api, "--set", "cluster.secret.existingSecret=replicas"]),
      renderChart(CLUSTER_VALUES),
    ]);
    const secret = one<
      K8sObject & { data: Record<string, string>; metadata: { annotations: Record<string, string> } }
    >(made, "Secret", "release-pdu-bridge-cluster");
    const value = Buffer.from(secret.data.SERVICE_CLUSTER_SECRET!, "base64").toString("utf8");
    assert.match(value, /^[A-Za-z0-9]{48}$/);
    assert.equal(secret.metadata.annotations["helm.sh/resource-policy"], "keep");
    const ref = (objects: K8sObject[]) =>
      (
        env(objects, "SERVICE_CLUSTER_SECRET") as
          { valueFrom?: { secretKeyRef?: { name: string; key: string } } } | undefined
      )?.valueFrom?.secretKeyRef;
    assert.deepEqual(ref(made), { name: "release-pdu-bridge-cluster", key: "SERVICE_CLUSTER_SECRET" });
    // What a pod runs with: the configuration loads with that secret.
    const config = await inPod(configText(made), { HOSTNAME: "p-1", SERVICE_CLUSTER_SECRET: value });
    assert.equal(config.Cluster.Secret, value);
    await assert.rejects(inPod(configText(made), { HOSTNAME: "p-1" }), /SERVICE_CLUSTER_SECRET/);
    assert.deepEqual(ref(theirs), { name: "replicas", key: "SERVICE_CLUSTER_SECRET" });
    assert.deepEqual(
      ofKind(theirs, "Secret").filter((o) => o.metadata.name.endsWith("-cluster")),
      [],
    );
    assert.equal(ref(withoutApi), undefined, "nothing is handed between replicas without the API");
  });

  it("the etcd backend only with TLS and authentication", async () => {
    const etcd = ["--set", "config.Cluster.Backend=etcd"];
    const refused = await runHelm([
      "template",
      "release",
      CHART_DIR,
      ...CLUSTER_VALUES,
      ...etcd,
      "--set",
      "config.Cluster.Etcd.Endpoints={http://etcd-0.etcd:2379}",
    ]);
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /config\.Cluster\.Etcd\.Endpoints: http:\/\/etcd-0\.etcd:2379 is not https:\/\//,
    );
    const anonymous = await runHelm([
      "template",
      "release",
      CHART_DIR,
      "--set",
      "replicaCount=2",
      "--set",
      "config.Mqtt.Connection.Host=mqtt",
      ...etcd,
      "--set",
      "config.Cluster.Etcd.Endpoints={https://etcd-0.etcd:2379}",
    ]);
    assert.notEqual(anonymous.code, 0);
    assert.match(anonymous.stderr, /the etcd backend needs authentication/);
  });

  it("with the Kubernetes config source too: both Roles", async () => {
    const objects = await renderChart([...CLUSTER_VALUES, "--set", "configSource=kubernetes"]);
    assert.deepEqual(
      ofKind(objects, "Role")
        .map((r) => r.metadata.name)
        .sort(),
      ["release-pdu-bridge-config-reader", "release-pdu-bridge-leases"],
    );
  });

  it("a NetworkPolicy restricting the API lets the replicas reach each other's API (forwarded control)", async () => {
    const restricted = [
      "--set",
      "networkPolicy.enabled=true",
      "--set",
      "networkPolicy.apiFrom[0].namespaceSelector.matchLabels.name=ingress",
      "--set",
      "config.Api.Enabled=true",
    ];
    const apiFrom = (objects: K8sObject[]) => {
      const spec = one(objects, "NetworkPolicy").spec as {
        ingress: { ports: { port: string }[]; from?: Record<string, unknown>[] }[];
      };
      return spec.ingress.find((r) => r.ports.some((p) => p.port === "api"))?.from;
    };
    const [clustered, alone] = await Promise.all([
      renderChart([...CLUSTER_VALUES, ...restricted]),
      renderChart([...restricted, "--set", "config.Pdus.default.Connection.Host=10.0.0.10"]),
    ]);
    const pods = deployment(clustered).spec.template.metadata.labels;
    const selector = apiFrom(clustered)?.find((peer) => "podSelector" in peer) as
      { podSelector: { matchLabels: Record<string, string> } } | undefined;
    assert.ok(selector !== undefined, "the replicas' own pods are let in");
    for (const [k, v] of Object.entries(selector.podSelector.matchLabels)) assert.equal(pods[k], v, k);
    assert.deepEqual(apiFrom(alone), [{ namespaceSelector: { matchLabels: { name: "ingress" } } }]);
  });

  it("the API's Service keeps a browser on one replica (sign-in sessions are per replica), unless told otherwise", async () => {
    const api = ["--set", "config.Api.Enabled=true"];
    const [clustered, alone, none] = await Promise.all([
      renderChart([...CLUSTER_VALUES, ...api]),
      renderChart([...api, "--set", "config.Pdus.default.Connection.Host=10.0.0.10"]),
      renderChart([...CLUSTER_VALUES, ...api, "--set", "service.api.sessionAffinity=None"]),
    ]);
    const affinity = (objects: K8sObject[]) =>
      (one(objects, "Service", "api").spec as { sessionAffinity: string }).sessionAffinity;
    assert.equal(affinity(clustered), "ClientIP");
    assert.equal(affinity(alone), "None");
    assert.equal(affinity(none), "None");
  });

  it("refuses replicas without the cluster, and the cluster without an external broker", async () => {
    const cases: [string[], RegExp][] = [
      [["--set", "config.Cluster.Enabled=false"], /replicaCount above 1 needs the cluster/],
      [
        ["--set", "config.Mqtt.Connection.Host=null"],
        /needs an external broker in config\.Mqtt\.Connection\.Host/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await runHelm(["template", "release", CHART_DIR, ...CLUSTER_VALUES, ...args]);
      assert.notEqual(result.code, 0, args.join(" "));
      assert.match(result.stderr, message);
    }
  });
});
