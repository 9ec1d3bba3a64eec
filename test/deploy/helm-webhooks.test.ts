/**
 * The chart's webhook secrets (docs/events.md, Webhooks): `webhooks.existingSecret` adds a Secret
 * whose keys are SERVICE_WEBHOOK_<N>_SECRET to the container's environment, beside the chart's own
 * secrets; unset, nothing is added.
 */
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { helmUnavailable, renderChart, type K8sObject } from "../../testkit/helm.js";

const skip = await helmUnavailable();

interface Container {
  envFrom?: { secretRef?: { name: string } }[];
}
const container = (objects: K8sObject[]) =>
  (
    objects.find((o) => o.kind === "Deployment") as unknown as {
      spec: { template: { spec: { containers: Container[] } } };
    }
  ).spec.template.spec.containers[0]!;

describe("the chart's webhook secrets", { skip }, () => {
  let plain: K8sObject[];
  let withHooks: K8sObject[];

  before(async () => {
    [plain, withHooks] = await Promise.all([
      renderChart(["--set", "existingSecret=pdu-bridge-secrets"]),
      renderChart([
        "--set",
        "existingSecret=pdu-bridge-secrets",
        "--set",
        "webhooks.existingSecret=pdu-bridge-webhooks",
      ]),
    ]);
  });

  it("adds the webhooks' Secret to the environment only when named", () => {
    const names = (objects: K8sObject[]) => (container(objects).envFrom ?? []).map((e) => e.secretRef?.name);
    assert.deepEqual(names(plain), ["pdu-bridge-secrets"]);
    assert.deepEqual(names(withHooks), ["pdu-bridge-secrets", "pdu-bridge-webhooks"]);
  });
});
