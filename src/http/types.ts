/** The types every HTTP module shares: the fastify app, the fast path, what the listeners read. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from "fastify";
import type { Config } from "../config/schema.js";
import type { ControlService } from "../control/types.js";
import type { Logger } from "../log.js";
import type { BridgeMetrics } from "../metrics/bridge.js";
import type { HomeAssistantStatus, MqttStatus } from "../mqtt/types.js";
import type { SnapshotStore } from "../poller/store.js";
import type { ConsoleFeed } from "../ui/feed.js";

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

/** What the HTTP listeners read from the running service. */
export interface HttpDeps {
  readonly config: Config;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  /** Process start (epoch ms). */
  readonly startedAt: number;
  mqttStatus(): MqttStatus;
  homeAssistantStatus(): HomeAssistantStatus;
  /** Present when control is wired (the control endpoints answer 403 while Api.ApiKey is empty). */
  readonly control?: ControlService;
  /** The web console's live feed; the API listener makes its own when absent. */
  readonly console?: ConsoleFeed;
  /** Present when Metrics.Enabled: served on the health listener, counts the requests of both. */
  readonly metrics?: BridgeMetrics;
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
  /** Clock, for tests of ages and readiness limits. */
  readonly now?: () => number;
}
