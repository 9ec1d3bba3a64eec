/**
 * The coordination layer for several replicas (`Cluster.Enabled`, docs/cluster.md): which replica
 * polls, publishes and writes for which instance, and the fencing that keeps two replicas from ever
 * writing to one PDU at once. A self-contained library: it knows instance ids, not PDUs, MQTT or
 * HTTP. This is everything the service calls; nothing else in src/cluster/ is meant for it.
 *
 * Life cycle
 * - `createCluster(config.Cluster, { logger, env, instanceIds })` builds it (a ConfigError when the
 *   engine cannot be set up: no namespace, no CA file); `createClusterWithStore` takes a LeaseStore
 *   (tests give each in-process replica its own client).
 * - `start()` joins: writes this replica's member lease and runs the loop (renewals every
 *   RetryPeriod, acquisitions, handovers). It resolves after the first round; the first buckets come
 *   a settling time later (2 × RetryPeriod, so that replicas started together spread at once).
 * - `stop()` leaves (SIGTERM): holds nothing from that moment, lets writes in flight end (their
 *   deadlines bound this), deletes the member lease and releases every bucket, so the others take
 *   them within a round (well inside the 5 s handover).
 * - `setReady(ready)`: readiness is published in the member lease (the service says ready when its
 *   MQTT connection is up); buckets go to ready replicas, and to any live one when none is ready.
 *
 * Asking, for an instance (each belongs to bucket `bucketOf(id)`)
 * - `holds(id)`: this replica holds the instance's bucket and its lease is valid on the monotonic
 *   clock right now. Poll, publish, take its MQTT commands and run its REST writes only while true;
 *   the `lost` event says when to stop (at once, whatever is in flight).
 * - `holderOf(id)`: the member name holding it as last seen, or null (for forwarding; 503 while null);
 *   `urlOf(member)`: the REST API URL that member advertises in its member lease (`options.url`).
 * - `beforeWrite(id, { onceId })`: call before every PDU write (control or settings). Renews the
 *   bucket's lease with a conditional write and returns a `WriteGrant`: call `assertMayStart()`
 *   right before sending (throws when the write could no longer end before another replica might
 *   take the lease, e.g. after an event-loop stall), pass `signal` to the request (aborted at the
 *   lease's validity end or when the bucket is lost), and `done()` when it ended. Throws
 *   `FencingError` (`reason`: not-holder with `holder` for forwarding, renewal-failed, once-used,
 *   late, stopping). With `onceId` (reboot, resetStats: an id made once per accepted command, kept
 *   across forwarding retries) the same renewal records the id in the lease; an id recorded before,
 *   here or by a previous holder, is refused with `once-used`, so a command never runs twice. A
 *   failed beforeWrite with an onceId may have recorded it: report the outcome as unknown.
 *   With `hold` (a reboot: the outlet's key and its reboot hold in ms) the same renewal records
 *   that the outlet is held until the write's deadline plus the hold; a reboot of an outlet whose
 *   hold runs, here or recorded by a previous holder, is refused with `held`.
 * - `onceUsed(id, onceId)`: the id is recorded in the bucket's lease as last seen (no engine call).
 *
 * Telling
 * - `on(listener)`: `{ type: "acquired", bucket }`, `{ type: "lost", bucket, reason }` (handover,
 *   stopping, renew-deadline, conflict, blocked) and `{ type: "members", members }`. Listeners run
 *   synchronously; `instancesOf(bucket)` maps a bucket to the configured instance ids.
 * - `status()`: member, engine, state, blocked, reachable and the last answer's age (for /readyz),
 *   ready, buckets, instances held, members, transitions, the members that stopped renewing and
 *   the instances nobody polls (for /health/integrations and the metrics
 *   pdu_bridge_cluster_buckets_held, pdu_bridge_cluster_lease_transitions_total,
 *   pdu_bridge_cluster_members).
 */
import { peerNetworks } from "../config/peer-networks.js";
import { DEFAULT_PEER_NETWORKS, type ClusterConfig } from "../config/schema.js";
import type { Env } from "../config/secrets.js";
import type { Logger } from "../log.js";
import { bucketOf } from "./assign.js";
import { createLeaseStore, createRecordStore } from "./engines.js";
import {
  Elector,
  type ClusterEvent,
  type ClusterStatus,
  type WriteGrant,
  type WriteOptions,
} from "./elector.js";
import { BucketRecords, type RecordKind } from "./records.js";
import type { LeaseStore } from "./store.js";

export { bucketOf } from "./assign.js";
export {
  FencingError,
  ONCE_ID_PATTERN,
  type ClusterEvent,
  type ClusterStatus,
  type LossReason,
  type MemberView,
  type WriteGrant,
  type WriteOptions,
} from "./elector.js";
export type { LeaseStore } from "./store.js";
export { BucketRecords, MAX_RECORD_PAYLOAD_LENGTH, type RecordKind } from "./records.js";

export interface ClusterOptions {
  readonly logger: Logger;
  /** The configured instance ids (for `instancesOf` and the status). */
  readonly instanceIds?: readonly string[];
  /** Ready from the start (default false). */
  readonly ready?: boolean;
  /** Where the other replicas reach this replica's REST API (forwarded control), or null. */
  readonly url?: string | null;
  /** The store of the records beside the leases (closed with the cluster); default the lease store. */
  readonly recordStore?: LeaseStore;
}

export interface Cluster {
  readonly member: string;
  readonly buckets: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  setReady(ready: boolean): void;
  bucketOf(instanceId: string): number;
  instancesOf(bucket: number): readonly string[];
  holds(instanceId: string): boolean;
  holderOf(instanceId: string): string | null;
  /** `<member>/<incarnation>`: this process in the cluster (a restart is another identity). */
  readonly identity: string;
  /**
   * The REST API URL a member advertises (its member lease, alive as last seen), when it is within
   * `Cluster.PeerNetworks`; else null.
   */
  urlOf(member: string): string | null;
  /** The identity holding a member's lease (alive as last seen), or null. */
  identityOf(member: string): string | null;
  beforeWrite(instanceId: string, options?: WriteOptions): Promise<WriteGrant>;
  onceUsed(instanceId: string, onceId: string): boolean;
  on(listener: (event: ClusterEvent) => void): () => void;
  status(): ClusterStatus & {
    readonly instances: readonly string[];
    readonly unpolledInstances: readonly UnpolledInstance[];
  };
  /** Freezes the loop without releasing anything, as a paused or killed process would (for tests). */
  halt(): void;
  /** The records of a kind kept per bucket for its next holder (./records.ts). */
  records(kind: RecordKind): BucketRecords;
  /** Whether this replica holds the bucket now (its lease renewed within the deadline). */
  holdsBucket(bucket: number): boolean;
}

/** A configured instance nobody polls now, as this replica sees it (`status().unpolled`, by instance). */
export interface UnpolledInstance {
  readonly id: string;
  readonly bucket: number;
  /** The member whose lease is running out; null when its bucket is held by nobody. */
  readonly holder: string | null;
}

/** The cluster of a `Cluster` configuration, on its engine. */
export async function createCluster(
  config: ClusterConfig,
  options: ClusterOptions & { readonly env?: Env },
): Promise<Cluster> {
  const env = options.env ?? process.env;
  const store = await createLeaseStore(config, env);
  const recordStore = await createRecordStore(config, env);
  warnInsecureEtcd(config, options.logger);
  return createClusterWithStore(store, config, { ...options, recordStore });
}

/** The cluster on a given lease store; `stop()` closes it. */
export function createClusterWithStore(
  store: LeaseStore,
  config: Pick<
    ClusterConfig,
    "MemberName" | "Buckets" | "LeaseDurationSeconds" | "RenewDeadlineSeconds" | "RetryPeriodSeconds"
  > &
    Partial<Pick<ClusterConfig, "PeerNetworks">>,
  options: ClusterOptions,
): Cluster {
  const elector = new Elector({
    store,
    member: config.MemberName,
    buckets: config.Buckets,
    leaseDurationMs: config.LeaseDurationSeconds * 1000,
    renewDeadlineMs: config.RenewDeadlineSeconds * 1000,
    retryPeriodMs: config.RetryPeriodSeconds * 1000,
    logger: options.logger,
    ...(options.ready === undefined ? {} : { ready: options.ready }),
    ...(options.url === undefined ? {} : { url: options.url }),
  });
  const byBucket = new Map<number, string[]>();
  for (const id of options.instanceIds ?? []) {
    const bucket = bucketOf(id, config.Buckets);
    byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), id]);
  }
  const bucket = (id: string) => bucketOf(id, config.Buckets);
  const urlOf = advertisedUrls(elector, config.PeerNetworks ?? DEFAULT_PEER_NETWORKS, options.logger);
  const records = new Map<string, BucketRecords>();
  const recordStore = options.recordStore ?? store;
  return {
    records: (kind) => {
      let kept = records.get(kind);
      if (kept === undefined) {
        kept = new BucketRecords(recordStore, kind);
        records.set(kind, kept);
      }
      return kept;
    },
    member: elector.member,
    identity: elector.identity,
    buckets: elector.buckets,
    start: () => elector.start(),
    stop: async () => {
      try {
        await elector.stop();
      } finally {
        await store.close();
        if (recordStore !== store) await recordStore.close();
      }
    },
    halt: () => elector.halt(),
    setReady: (ready) => elector.setReady(ready),
    bucketOf: bucket,
    instancesOf: (b) => byBucket.get(b) ?? [],
    holds: (id) => elector.holdsBucket(bucket(id)),
    holdsBucket: (b) => elector.holdsBucket(b),
    holderOf: (id) => elector.holderOf(bucket(id)),
    urlOf,
    identityOf: (member) => elector.identityOf(member),
    beforeWrite: (id, writeOptions) => elector.beforeWrite(bucket(id), writeOptions),
    onceUsed: (id, onceId) => elector.onceUsed(bucket(id), onceId),
    on: (listener) => elector.on(listener),
    status: () => {
      const status = elector.status();
      const unpolledInstances = status.unpolled.flatMap(({ bucket: b, holder }) =>
        (byBucket.get(b) ?? []).map((id) => ({ id, bucket: b, holder })),
      );
      return {
        ...status,
        instances: status.buckets.flatMap((b) => byBucket.get(b) ?? []),
        unpolledInstances,
      };
    },
  };
}

/** Members whose refused URL was logged, at most (one line per member and URL). */
const REFUSED_URLS_LOGGED = 256;

/**
 * `urlOf` with `Cluster.PeerNetworks` applied: a member advertising a URL outside them is never
 * sent a request (its instances answer 503 here), and it is logged once per member and URL.
 */
function advertisedUrls(elector: Elector, networks: readonly string[], logger: Logger) {
  const peers = peerNetworks(networks);
  const logged = new Set<string>();
  return (member: string): string | null => {
    const url = elector.urlOf(member);
    if (url === null || peers.allows(url)) return url;
    const key = `${member} ${url}`;
    if (!logged.has(key) && logged.size < REFUSED_URLS_LOGGED) {
      logged.add(key);
      logger.error(
        { member, url, networks },
        "cluster: a member advertises an API address outside Cluster.PeerNetworks; nothing is sent to it",
      );
    }
    return null;
  };
}

/**
 * etcd without TLS or without authentication works, but whoever reaches it can write the leases:
 * advertise a member, take buckets, erase once-only ids and reboot holds (docs/cluster.md, "The
 * engines"). Said once at start; the Kubernetes backend has the API server's RBAC.
 */
function warnInsecureEtcd(config: ClusterConfig, logger: Logger): void {
  if (config.Backend !== "etcd") return;
  const plain = config.Etcd.Endpoints.filter((e) => !e.startsWith("https://"));
  const anonymous = config.Etcd.Credentials.Username === null;
  if (plain.length === 0 && !anonymous) return;
  logger.warn(
    { plainEndpoints: plain, authentication: !anonymous },
    "cluster: etcd without TLS or authentication: anyone who reaches it can write the leases; production needs both (docs/cluster.md)",
  );
}
