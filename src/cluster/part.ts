/**
 * The cluster as one of the service's parts (docs/cluster.md), when `Cluster.Enabled`: this
 * replica's membership, its buckets and what they mean to the other parts. It turns the cluster's
 * `acquired`/`lost` events into the bus's `ownershipChanged` (the bucket's instances, and the bucket
 * itself for MQTT's availability connections), and reports the replica ready while its MQTT
 * connection is up (`mqttConnected`/`mqttLost`). Its `Ownership` is the cluster's `holds`, asked at
 * the moment of each use, so a lease that ran out stops polling, publishing and writing at once.
 *
 * It stands after `mqtt` in the part list: it stops before MQTT does, so its buckets are handed over
 * (and their availability kept `online` for the next holders) before MQTT's stop marks anything
 * `offline`, which then concerns none of them.
 */
import type { EventBus } from "../bus.js";
import type { Cluster } from "./index.js";
import type { Part } from "../lifecycle.js";
import type { Logger } from "../log.js";
import type { Ownership } from "../ownership.js";

export class ClusterPart implements Part {
  readonly name = "cluster";
  readonly cluster: Cluster;
  readonly ownership: Ownership;
  readonly #bus: EventBus;
  readonly #logger: Logger;
  readonly #mqttUp: () => boolean;
  /** Removes the listener of the cluster's own events. */
  #offCluster: (() => void) | null = null;

  /** `mqttUp` says whether MQTT is connected now: it starts before this part and tells the bus so then. */
  constructor(cluster: Cluster, bus: EventBus, logger: Logger, mqttUp: () => boolean) {
    this.cluster = cluster;
    this.#mqttUp = mqttUp;
    this.#bus = bus;
    this.#logger = logger.child({ part: "cluster" });
    this.ownership = { owns: (id) => cluster.holds(id) };
  }

  /** Whether this replica holds the bucket now (its first instance's lease valid). */
  holdsBucket(bucket: number): boolean {
    const first = this.cluster.instancesOf(bucket)[0];
    return first !== undefined && this.cluster.holds(first);
  }

  async start(): Promise<void> {
    const { cluster } = this;
    this.#offCluster = cluster.on((event) => {
      if (event.type === "members") {
        this.#bus.emit("membersChanged", { members: event.members.map((m) => m.name) });
        return;
      }
      const ids = cluster.instancesOf(event.bucket);
      const held = event.type === "acquired";
      // Leaving is a handover only while another replica is alive to take the bucket: the last
      // one leaving lets its buckets go unavailable, as when every replica is gone.
      const handover =
        event.type === "lost" &&
        (event.reason === "handover" ||
          (event.reason === "stopping" && cluster.status().members.some((m) => !m.self)));
      // At debug: the cluster logs its acquisitions per round, its losses and its leaving.
      if (event.type === "lost") {
        this.#logger.debug(
          { bucket: event.bucket, reason: event.reason, instances: ids.length },
          "bucket given up",
        );
      } else {
        this.#logger.debug({ bucket: event.bucket, instances: ids.length }, "bucket taken");
      }
      this.#bus.emit("ownershipChanged", {
        gained: held ? ids : [],
        lost: held ? [] : ids,
        bucket: {
          index: event.bucket,
          held,
          handover,
          ...(event.type === "lost" && event.holdRelease !== undefined
            ? { holdRelease: event.holdRelease }
            : {}),
        },
      });
    });
    this.#bus.listen(this, {
      mqttConnected: () => cluster.setReady(true),
      mqttLost: ({ stopping }) => {
        if (!stopping) cluster.setReady(false);
      },
    });
    if (this.#mqttUp()) cluster.setReady(true);
    await cluster.start();
  }

  async stop(): Promise<void> {
    try {
      await this.cluster.stop();
    } finally {
      this.#offCluster?.();
      this.#offCluster = null;
    }
  }
}
