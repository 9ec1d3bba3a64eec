/** The types every HTTP module shares: the fastify app, the fast path, what the listeners read. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, RawServerDefault } from "fastify";
import type { AssetsView } from "../assets/view.js";
import type { EventBus } from "../bus.js";
import type { ClusterStatus } from "../cluster-status.js";
import type { Config } from "../config/schema.js";
import type { AssetControl } from "../control/asset-control.js";
import type { SequenceService } from "../control/sequences.js";
import type { ControlService } from "../control/types.js";
import type { Logger } from "../log.js";
import type { HomeAssistantStatus, MqttStatus } from "../mqtt/types.js";
import type { SnapshotStore } from "../poller/store.js";

/** A listener's fastify app, typed by its typebox schemas. */
export type HttpApp = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/**
 * Answers a request without fastify, or returns false to leave it to fastify's routing. For the
 * few GETs that monitoring polls hardest; answers must be byte for byte what the routes answer. It
 * must write nothing before it is sure to answer: when it throws, fastify's route answers instead.
 */
export type FastPath = (request: IncomingMessage, response: ServerResponse) => boolean;

/** The two listeners, as metrics and logs name them. */
export type ListenerName = "api" | "health";

/**
 * Routes of a part outside src/http/ (the web console, the metrics endpoint), added by a listener
 * in their place among its own. The composition root passes them in, so src/http/ depends on no
 * such part.
 */
export type ListenerRoutes = (app: HttpApp, deps: HttpDeps) => void;

/** What the listeners count (src/metrics/ implements it). */
export interface HttpMetrics {
  /** Counts every response of this fastify app. */
  instrument(app: HttpApp, listener: ListenerName): void;
  /** The same fast path, counting what it answers. */
  wrapFastPath(listener: ListenerName, fastPath: FastPath): FastPath;
  /** `count` answered requests of `route` (the API worker reports what it answered itself). */
  observeHttp(listener: ListenerName, route: string, statusCode: number, count?: number): void;
  /** The REST API's worker thread is being started again. */
  observeApiWorkerRestart(): void;
}

/**
 * This replica in the cluster (`Cluster.Enabled`, docs/cluster.md), as readiness and the
 * integrations report read it: the cluster's status (src/cluster-status.ts) and what the
 * composition root adds. Nothing in it is a secret: the engine's endpoints hold no credentials (the
 * configuration refuses them), and the report takes any user info out anyway.
 */
export interface ClusterHealth extends ClusterStatus {
  /** `Cluster.Backend`: etcd or kubernetes. */
  readonly backend: string;
  /** `Cluster.Buckets`. */
  readonly bucketCount: number;
  /** The configured instances of the buckets held. */
  readonly instances: readonly string[];
  /**
   * The configured instances nobody polls now: those of the buckets in `unpolled`, each with the
   * member whose lease is running out (null: held by nobody).
   */
  readonly unpolledInstances: readonly {
    readonly id: string;
    readonly bucket: number;
    readonly holder: string | null;
  }[];
}

/**
 * This replica's side of the traffic between replicas (`Cluster.Enabled`, docs/cluster.md "REST on
 * any replica"). It lives in src/cluster/forward/; the composition root passes it in, so src/http/
 * depends on none of it.
 */
export interface ReplicaSurface {
  /** Whether this replica holds the instance now. */
  holds(instanceId: string): boolean;
  /** Answers one instance's readings with its holder's answer (or 503 with Retry-After). */
  readFromHolder(instanceId: string, reply: FastifyReply): Promise<FastifyReply>;
  /**
   * Adds the routes other replicas call (hidden from the OpenAPI document), in a context of their
   * own; `readings` answers their reads from this replica's snapshots.
   */
  routes(app: HttpApp, deps: HttpDeps, readings: LocalReadings): Promise<void>;
}

/** One instance's readings as `GET /api/v1/readings?instance=` answers them here, or null when unknown. */
export interface LocalReadings {
  readingsOf(instanceId: string): Buffer | null;
}

/** What the HTTP listeners read from the running service. */
export interface HttpDeps {
  readonly config: Config;
  readonly store: SnapshotStore;
  /** The service's bus: what the listeners follow (snapshots, for the worker's mirror) and tell (control attempts). */
  readonly bus: EventBus;
  readonly logger: Logger;
  /** Process start (epoch ms). */
  readonly startedAt: number;
  mqttStatus(): MqttStatus;
  homeAssistantStatus(): HomeAssistantStatus;
  /** Present when control is wired (the control endpoints answer 403 while Api.ApiKey is empty). */
  readonly control?: ControlService;
  /** Asset control (`POST /api/v1/assets/:id/control`); absent: the route answers 503. */
  readonly assetControl?: Pick<AssetControl, "execute">;
  /** Power sequences (`/api/v1/sequences`); absent: the routes answer 503 (GET 404). */
  readonly sequences?: SequenceService;
  /**
   * Among several replicas: this replica's side of the traffic between replicas (src/cluster/forward/),
   * which carries out the requests other replicas hand it; `control` is then the forwarding service.
   */
  readonly replica?: ReplicaSurface;
  /**
   * Assets and feeds (src/assets/view.ts): `GET /api/v1/assets`, `/feeds`, and the alarms about
   * several PDUs in `/alarms`; absent: none configured in this process (the routes answer empty).
   */
  readonly assets?: AssetsView;
  /** The web console's routes on the API listener (src/ui/); absent: the API serves no console. */
  readonly consoleRoutes?: ListenerRoutes;
  /** Present when Metrics.Enabled: counts the requests of both listeners. */
  readonly metrics?: HttpMetrics;
  /** `GET <Metrics.Path>` on the health listener (src/metrics/), present with `metrics`. */
  readonly metricsRoute?: ListenerRoutes;
  /**
   * Why the REST API does not answer now (its worker thread died or hung and is being started again), or
   * null; absent when the REST API is off or runs on the main thread.
   */
  apiOutage?(): string | null;
  /**
   * Why control of an instance will fail: the PDU refused the login checked at start (with what
   * to fix), or null; absent when nothing checks logins.
   */
  loginProblem?(instanceId: string): string | null;
  /** This replica in the cluster; present only with `Cluster.Enabled`. */
  clusterStatus?(): ClusterHealth;
  /** Each webhook receiver's state (src/webhooks/); absent when none is configured. */
  webhooks?(): readonly WebhookHealth[];
  /** Clock, for tests of ages and readiness limits. */
  readonly now?: () => number;
}

/** A webhook receiver as the health listener shows it (docs/events.md, Webhooks). */
export interface WebhookHealth {
  readonly receiver: string;
  /** The URL's host only. */
  readonly host: string;
  readonly state: "idle" | "delivering" | "failing";
  readonly queued: number;
  readonly delivered: number;
  readonly failed: number;
  readonly dropped: number;
  readonly lastError: string | null;
  readonly lastDeliveredAt: number | null;
}
