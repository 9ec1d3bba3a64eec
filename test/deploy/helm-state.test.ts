/**
 * The chart's `State.Dir` (docs/energy.md): in single-replica mode a PersistentVolumeClaim (kept on
 * uninstall) mounted where the rendered configuration's `State.Dir` points, which the service
 * accepts; with the cluster, or persistence off, neither claim nor mount nor `State.Dir`; a claim of
 * the user's instead of the chart's.
 */
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { parse } from "yaml";
import { parseConfigText } from "../../src/config/load.js";
import { CHART_DIR, helmUnavailable, renderChart, type K8sObject } from "../../testkit/helm.js";

const skip = await helmUnavailable();

interface Pod {
  containers: { volumeMounts?: { name: string; mountPath: string }[] }[];
  volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[];
}

const ofKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const pod = (objects: K8sObject[]) =>
  (ofKind(objects, "Deployment")[0] as unknown as { spec: { template: { spec: Pod } } }).spec.template.spec;
const configText = (objects: K8sObject[]) =>
  (ofKind(objects, "ConfigMap")[0]!.data as Record<string, string>)["config.yaml"]!;

describe("the chart's State.Dir volume", { skip }, () => {
  let single: K8sObject[];
  let cluster: K8sObject[];
  let off: K8sObject[];
  let existing: K8sObject[];

  before(async () => {
    [single, cluster, off, existing] = await Promise.all([
      renderChart(),
      renderChart(["-f", `${CHART_DIR}/ci/cluster-values.yaml`]),
      renderChart(["--set", "state.persistence.enabled=false"]),
      renderChart(["--set", "state.persistence.existingClaim=my-energy"]),
    ]);
  });

  it("single replica: a claim kept on uninstall, mounted at State.Dir, which the service accepts", async () => {
    const [claim] = ofKind(single, "PersistentVolumeClaim");
    assert.ok(claim, "a PersistentVolumeClaim");
    assert.equal(claim.metadata.annotations?.["helm.sh/resource-policy"], "keep");
    const spec = pod(single);
    const volume = spec.volumes?.find((v) => v.name === "state");
    assert.equal(volume?.persistentVolumeClaim?.claimName, claim.metadata.name);
    assert.ok(
      spec.containers[0]!.volumeMounts?.some(
        (m) => m.name === "state" && m.mountPath === "/var/lib/pdu-bridge",
      ),
    );
    const config = await parseConfigText(configText(single), "chart", {}, { source: "kubernetes" });
    assert.equal(config.State.Dir, "/var/lib/pdu-bridge");
  });

  it("with the cluster or persistence off: no claim, no mount, no State.Dir", () => {
    for (const objects of [cluster, off]) {
      assert.deepEqual(ofKind(objects, "PersistentVolumeClaim"), []);
      assert.ok(!pod(objects).volumes?.some((v) => v.name === "state"));
      const state = (parse(configText(objects)) as { State?: { Dir?: string } }).State;
      assert.equal(state?.Dir, undefined);
    }
  });

  it("a claim of the user's instead of the chart's", () => {
    assert.deepEqual(ofKind(existing, "PersistentVolumeClaim"), []);
    assert.equal(
      pod(existing).volumes?.find((v) => v.name === "state")?.persistentVolumeClaim?.claimName,
      "my-energy",
    );
  });
});
