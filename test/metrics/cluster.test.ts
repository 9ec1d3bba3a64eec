/**
 * The cluster's series (`Cluster.Enabled`): the gauges read at scrape time, lease transitions
 * counted from the bus's `ownershipChanged` by event (acquired, released, lost), promtool's check
 * of the exposition, and none of them without a cluster. The replicas' test
 * (test/cluster/engine-outage.test.ts) scrapes them from real processes around an etcd outage.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { BridgeMetrics } from "../../src/metrics/bridge.js";
import type { ClusterMetricsView } from "../../src/metrics/cluster.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { prometheusUnavailable, promtool } from "../../testkit/prometheus.js";

const noPromtool = await prometheusUnavailable();

function metricsOf(cluster: (() => ClusterMetricsView) | null) {
  const bus = new EventBus();
  const store = new SnapshotStore(["a", "b"], { bus });
  const metrics = new BridgeMetrics({
    store,
    bus,
    skippedPolls: () => 0,
    mqtt: () => null,
    ...(cluster === null ? {} : { cluster }),
  });
  metrics.start();
  return { bus, store, metrics };
}

const sample = (text: string, name: string): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
};

describe("cluster metrics", () => {
  it("reads the buckets held, the members and the engine at each scrape; counts transitions by event", async () => {
    let view: ClusterMetricsView = { bucketsHeld: 0, members: 1, engineReachable: true };
    const { bus, store, metrics } = metricsOf(() => view);
    try {
      let text = (await metrics.render(false)).body;
      assert.equal(sample(text, "pdu_bridge_cluster_buckets_held"), 0);
      assert.equal(sample(text, "pdu_bridge_cluster_members"), 1);
      assert.equal(sample(text, "pdu_bridge_cluster_engine_reachable"), 1);
      for (const event of ["acquired", "released", "lost"])
        assert.equal(sample(text, `pdu_bridge_cluster_lease_transitions_total{event="${event}"}`), 0, event);

      const bucket = (index: number, held: boolean, handover: boolean) =>
        bus.emit("ownershipChanged", {
          gained: held ? ["a"] : [],
          lost: held ? [] : ["a"],
          bucket: { index, held, handover },
        });
      bucket(0, true, false);
      bucket(1, true, false);
      bucket(0, false, true);
      bucket(1, false, false);
      // Without a bucket (not from the cluster): not a lease transition.
      bus.emit("ownershipChanged", { gained: ["b"], lost: [] });
      view = { bucketsHeld: 3, members: 2, engineReachable: false };
      text = (await metrics.render(false)).body;
      assert.equal(sample(text, "pdu_bridge_cluster_buckets_held"), 3);
      assert.equal(sample(text, "pdu_bridge_cluster_members"), 2);
      assert.equal(sample(text, "pdu_bridge_cluster_engine_reachable"), 0);
      assert.equal(sample(text, 'pdu_bridge_cluster_lease_transitions_total{event="acquired"}'), 2);
      assert.equal(sample(text, 'pdu_bridge_cluster_lease_transitions_total{event="released"}'), 1);
      assert.equal(sample(text, 'pdu_bridge_cluster_lease_transitions_total{event="lost"}'), 1);
      if (noPromtool === undefined) {
        const check = await promtool(["check", "metrics"], text);
        assert.equal(check.code, 0, check.output);
      }
      const open = (await metrics.render(true)).body;
      assert.match(open, /^# TYPE pdu_bridge_cluster_lease_transitions counter$/m);
    } finally {
      metrics.close();
      store.close();
    }
  });

  it("has no cluster series in one process", async () => {
    const { store, metrics } = metricsOf(null);
    try {
      assert.doesNotMatch((await metrics.render(false)).body, /pdu_bridge_cluster_/);
    } finally {
      metrics.close();
      store.close();
    }
  });
});
