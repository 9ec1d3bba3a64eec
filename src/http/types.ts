/** What the HTTP listeners read from the running service. */
import type { EventBus } from "../bus.js";
import type { Config } from "../config/schema.js";
import type { ControlService } from "../control/types.js";
import type { Logger } from "../log.js";
import type { BridgeMetrics } from "../metrics/bridge.js";
import type { HomeAssistantStatus, MqttStatus } from "../mqtt/types.js";
import type { SnapshotStore } from "../poller/store.js";
import type { ConsoleFeed } from "../ui/feed.js";

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
