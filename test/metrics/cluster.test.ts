/**
 * The cluster's series (`Cluster.Enabled`): the gauges read at scrape time, lease transitions
 * counted from the bus's `ownershipChanged` by event (acquired, released, lost), promtool's check
 * of the exposition, and none of them without a cluster; a replica exports the per-instance series
 * and readings of the instances it holds now only (the last snapshot of one it gave up stays in its
 * store, and would otherwise be exported twice, stale, beside the new holder's). The replicas' test
 * (test/cluster/engine-outage.test.ts) scrapes them from real processes around an etcd outage.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EventBus } from "../../src/bus.js";
import { BridgeMetrics } from "../../src/metrics/bridge.js";
import type { ClusterMetricsView } from "../../src/metrics/cluster.js";
import type { Ownership } from "../../src/ownership.js";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import { SnapshotStore } from "../../src/poller/store.js";
import { wireApi } from "../../testkit/fixtures/wire.js";
import { prometheusUnavailable, promtool } from "../../testkit/prometheus.js";

const noPromtool = await prometheusUnavailable();

function metricsOf(cluster: (() => ClusterMetricsView) | null, ownership?: Ownership) {
  const bus = new EventBus();
  const store = new SnapshotStore(["a", "b"], { bus });
  const metrics = new BridgeMetrics({
    store,
    bus,
    skippedPolls: () => 0,
    mqtt: () => null,
    ...(cluster === null ? {} : { cluster }),
    ...(ownership === undefined ? {} : { ownership }),
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

  it("exports the per-instance series and readings of the instances held now, and only those", async () => {
    const held = new Set(["a", "b"]);
    const view = { bucketsHeld: 1, members: 2, engineReachable: true };
    const { store, metrics } = metricsOf(() => view, { owns: (id) => held.has(id) });
    try {
      for (const id of ["a", "b"]) store.recordSuccess(id, parseApiTree(wireApi(), id, Date.now()));
      let text = (await metrics.render(false)).body;
      for (const id of ["a", "b"]) {
        assert.equal(sample(text, `pdu_bridge_up{instance="${id}"}`), 1, id);
        assert.match(
          text,
          new RegExp(`^pdu_bridge_last_successful_poll_timestamp_seconds\\{instance="${id}"\\}`, "m"),
        );
        assert.match(text, new RegExp(`^pdu_outlet_power_watts\\{instance="${id}",`, "m"));
      }
      // "b" moved to another replica: its last snapshot stays in the store, its series go.
      held.delete("b");
      text = (await metrics.render(false)).body;
      assert.equal(sample(text, 'pdu_bridge_up{instance="a"}'), 1);
      // Counters stay (what this replica counted while it polled "b"); every other series goes.
      assert.doesNotMatch(
        text,
        /^pdu_(?!bridge_poll_failures_total|bridge_polls_skipped_total)[a-z_]+\{instance="b"/m,
      );
      assert.match(text, /^pdu_bridge_poll_failures_total\{instance="b"\} 0$/m);
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
