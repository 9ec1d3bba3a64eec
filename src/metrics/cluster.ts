/**
 * The cluster's metrics (docs/metrics.md, "Several replicas"), registered only with
 * `Cluster.Enabled`: the buckets held, the members seen and whether the engine answers are read at
 * scrape time; lease transitions are counted from the bus's `ownershipChanged` (a bucket acquired,
 * released to another holder or on stop, or lost).
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { OwnershipChangedEvent } from "../bus.js";

/** This replica in the cluster, as the metrics read it at scrape time. */
export interface ClusterMetricsView {
  /** Buckets held now. */
  readonly bucketsHeld: number;
  /** Members seen alive, this replica included while its own lease is valid. */
  readonly members: number;
  /** The coordination engine answered within RenewDeadline. */
  readonly engineReachable: boolean;
}

/** The `event` label of `pdu_bridge_cluster_lease_transitions_total`. */
export const TRANSITION_EVENTS = ["acquired", "released", "lost"] as const;
export type TransitionEvent = (typeof TRANSITION_EVENTS)[number];

/** Registers the cluster's series; returns what counts a transition. */
export function registerClusterMetrics(
  registers: Registry[],
  read: () => ClusterMetricsView,
): (event: OwnershipChangedEvent) => void {
  new Gauge({
    name: "pdu_bridge_cluster_buckets_held",
    help: "Buckets this replica holds now",
    registers,
    collect() {
      this.set(read().bucketsHeld);
    },
  });
  new Gauge({
    name: "pdu_bridge_cluster_members",
    help: "Replicas of the installation this replica sees alive, itself included",
    registers,
    collect() {
      this.set(read().members);
    },
  });
  new Gauge({
    name: "pdu_bridge_cluster_engine_reachable",
    help: "1 while the coordination engine answered within RenewDeadline",
    registers,
    collect() {
      this.set(read().engineReachable ? 1 : 0);
    },
  });
  const transitions = new Counter({
    name: "pdu_bridge_cluster_lease_transitions_total",
    help: "Bucket leases this replica acquired, released (handed over or on stop) and lost (not renewed in time, taken, blocked)",
    labelNames: ["event"],
    registers,
  });
  for (const event of TRANSITION_EVENTS) transitions.inc({ event }, 0);
  return ({ bucket }) => {
    if (bucket === undefined) return;
    const event: TransitionEvent = bucket.held ? "acquired" : bucket.handover ? "released" : "lost";
    transitions.inc({ event });
  };
}
