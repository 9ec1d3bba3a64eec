/** The chart's metrics objects: the health Service (port `metrics`) and the optional ServiceMonitor. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseConfigText } from "../../src/config/load.js";
import { CHART_DIR, helmUnavailable, renderChart, runHelm, type K8sObject } from "../../testkit/helm.js";

const skip = await helmUnavailable();
if (skip !== undefined) process.stderr.write(`SKIPPING the Helm metrics tests: ${skip}\n`);

interface Service extends K8sObject {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
}
interface ServiceMonitor extends K8sObject {
  spec: {
    namespaceSelector: { matchNames: string[] };
    selector: { matchLabels: Record<string, string> };
    endpoints: {
      port: string;
      path: string;
      interval: string;
      scrapeTimeout: string;
      honorLabels: boolean;
    }[];
  };
}
interface Deployment extends K8sObject {
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: { ports?: { name: string; containerPort: number }[] }[] };
    };
  };
}

const ofKind = <T extends K8sObject>(objects: K8sObject[], kind: string) =>
  objects.filter((o) => o.kind === kind) as T[];

describe("Helm chart: metrics", { skip }, () => {
  it("renders no ServiceMonitor and no health Service by default", async () => {
    const objects = await renderChart();
    assert.deepEqual(ofKind(objects, "ServiceMonitor"), []);
    assert.equal(ofKind(objects, "Service").length, 0);
  });

  it("with metrics.serviceMonitor.enabled: a ServiceMonitor that selects the health Service's metrics port", async () => {
    const objects = await renderChart([
      "--set",
      "metrics.serviceMonitor.enabled=true",
      "--set",
      "metrics.serviceMonitor.labels.release=kube-prometheus",
      "--set",
      "metrics.serviceMonitor.interval=15s",
      "--set",
      "config.Health.Port=9181",
      "--set",
      "config.Metrics.Path=/prom/metrics",
    ]);
    const [monitor, ...more] = ofKind<ServiceMonitor>(objects, "ServiceMonitor");
    assert.equal(more.length, 0);
    assert.equal(monitor!.apiVersion, "monitoring.coreos.com/v1");
    assert.equal(monitor!.metadata.labels?.release, "kube-prometheus");
    assert.deepEqual(monitor!.spec.namespaceSelector.matchNames, ["pdu"]);
    const endpoint = monitor!.spec.endpoints[0]!;
    assert.equal(endpoint.port, "metrics");
    assert.equal(endpoint.path, "/prom/metrics", "the path follows config.Metrics.Path");
    assert.equal(endpoint.interval, "15s");
    assert.equal(endpoint.honorLabels, true, "the bridge's instance label (the PDU) is kept");

    // The Service it selects exists, carries the port it names and reaches the pod's health port.
    const services = ofKind<Service>(objects, "Service");
    const selected = services.filter((s) =>
      Object.entries(monitor!.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v),
    );
    assert.equal(selected.length, 1, "exactly one Service matches the ServiceMonitor");
    const port = selected[0]!.spec.ports.find((p) => p.name === "metrics");
    assert.ok(port, "the Service port is named metrics");
    assert.equal(port.port, 9181);
    const deployment = ofKind<Deployment>(objects, "Deployment")[0]!;
    const containerPort = deployment.spec.template.spec.containers[0]!.ports?.find(
      (p) => p.name === port.targetPort,
    );
    assert.equal(containerPort?.containerPort, 9181, "targetPort names the container's health port");
    for (const [k, v] of Object.entries(selected[0]!.spec.selector))
      assert.equal(deployment.spec.template.metadata.labels[k], v, "the Service selects the pod");
  });

  it("service.health.enabled alone creates the health Service without a ServiceMonitor", async () => {
    const objects = await renderChart(["--set", "service.health.enabled=true"]);
    assert.equal(ofKind(objects, "ServiceMonitor").length, 0);
    const [service] = ofKind<Service>(objects, "Service");
    assert.equal(service?.spec.ports[0]?.name, "metrics");
    assert.equal(service?.spec.ports[0]?.port, 8081);
  });

  it("refuses a ServiceMonitor when the metrics or the health listener are off", async () => {
    for (const [off, key] of [
      ["config.Metrics.Enabled=false", "config.Metrics.Enabled"],
      ["config.Health.Enabled=false", "config.Health.Enabled"],
    ] as const) {
      const args = ["template", "r", CHART_DIR, "--set", "metrics.serviceMonitor.enabled=true", "--set", off];
      if (off.startsWith("config.Health")) args.push("--set", "healthProbes.enabled=false");
      const result = await runHelm(args);
      assert.notEqual(result.code, 0, off);
      assert.match(result.stderr, new RegExp(key.replace(".", "\\.")), result.stderr);
    }
  });

  it("renders ci/metrics-values.yaml: the ServiceMonitor on the moved path, a configuration the service accepts", async () => {
    const objects = await renderChart(["-f", `${CHART_DIR}/ci/metrics-values.yaml`]);
    const [monitor] = ofKind<ServiceMonitor>(objects, "ServiceMonitor");
    assert.equal(monitor?.spec.endpoints[0]?.path, "/prom/metrics");
    assert.equal(monitor?.metadata.labels?.release, "kube-prometheus-stack");
    const configMap = objects.find((o) => o.kind === "ConfigMap")!;
    const text = (configMap.data as Record<string, string>)["config.yaml"]!;
    const config = await parseConfigText(text, "config.yaml", {});
    assert.deepEqual(config.Metrics, { Enabled: true, Path: "/prom/metrics" });
  });

  it("passes helm lint --strict with the ServiceMonitor on", async () => {
    const result = await runHelm([
      "lint",
      "--strict",
      CHART_DIR,
      "--set",
      "metrics.serviceMonitor.enabled=true",
    ]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
  });
});
