/**
 * Where a control or settings request runs among several replicas (docs/cluster.md, "REST on any
 * replica"). {@link ForwardingControl} is the control service the REST surface (and the console,
 * which uses its routes) calls on every replica: it runs a request here when this replica holds the
 * instance (or when the request concerns no instance another replica could carry out: unknown, or
 * control disabled, which the local core refuses exactly as one process does), answers 503
 * `not-held` with Retry-After while nobody holds it, and else hands it to the holder (./client.ts),
 * which carries it out with its own core (./route.ts) and never forwards it again.
 *
 * The request keeps its command id (`ControlRequest.commandId`, made here when absent): a reboot or
 * resetStats is recorded under that id with the bucket's lease by the replica that writes it, so it
 * runs at most once whatever happens to the forward. Nothing is retried.
 */
import { randomBytes } from "node:crypto";
import { findInstance } from "../../config/instance-lookup.js";
import type { Config } from "../../config/schema.js";
import { NOT_HELD_RETRY_AFTER, refuse } from "../../control/outcomes.js";
import type {
  ControlOutcome,
  ControlRequest,
  ControlService,
  SettingsOutcome,
  SettingsRequest,
} from "../../control/types.js";
import type { Logger } from "../../log.js";
import { findHolder, forwardTo, ReplicaClient, type Forwarded, type HolderDirectory } from "./client.js";
import { restSource, type ForwardMessage } from "./protocol.js";

export type { Forwarded } from "./client.js";

/** What the forwarding needs of the cluster. */
export interface ForwardingCluster extends HolderDirectory {
  holds(instanceId: string): boolean;
}

export interface ForwardingDeps {
  /** Read on every request (live configuration changes). */
  readonly config: () => Config;
  /** This replica's control core: requests for instances it holds. */
  readonly local: ControlService;
  readonly cluster: ForwardingCluster;
  readonly logger: Logger;
  /** Overrides the forward's time limit (tests). */
  readonly timeoutMs?: number;
}

/** The control service of the REST surface among several replicas (see the file's comment). */
export class ForwardingControl implements ControlService {
  readonly #deps: ForwardingDeps;
  readonly #logger: Logger;
  readonly #client: ReplicaClient;

  constructor(deps: ForwardingDeps, client: ReplicaClient = new ReplicaClient(deps.timeoutMs)) {
    this.#deps = deps;
    this.#logger = deps.logger.child({ component: "forward" });
    this.#client = client;
  }

  async close(): Promise<void> {
    await this.#client.close();
  }

  execute(request: ControlRequest): Promise<Forwarded<ControlOutcome>> {
    const where = this.#where(request.instanceId);
    if (where === "here") return this.#deps.local.execute(request);
    const message: ForwardMessage = {
      kind: "command",
      instanceId: request.instanceId,
      target: request.target,
      action: request.action,
      source: restSource(request.source),
      commandId: request.commandId ?? randomBytes(12).toString("base64url"),
      ...(request.once === true ? { once: true } : {}),
      ...(request.asset === undefined ? {} : { asset: request.asset }),
      ...(request.assetCycle === true ? { assetCycle: true } : {}),
    };
    return this.#forward(where, message, `${request.action} on instance ${request.instanceId}`) as Promise<
      Forwarded<ControlOutcome>
    >;
  }

  applySettings(request: SettingsRequest): Promise<Forwarded<SettingsOutcome>> {
    const where = this.#where(request.instanceId);
    if (where === "here") {
      const { local } = this.#deps;
      return local.applySettings === undefined
        ? Promise.resolve(refuse(503, "Settings unavailable", "settings writes are not available"))
        : local.applySettings(request);
    }
    const message: ForwardMessage = {
      kind: "settings",
      instanceId: request.instanceId,
      target: request.target,
      settings: request.settings,
      source: restSource(request.source),
    };
    return this.#forward(where, message, `the settings write to instance ${request.instanceId}`) as Promise<
      Forwarded<SettingsOutcome>
    >;
  }

  /**
   * "here" when the local core answers (this replica holds the instance, or the request concerns
   * no instance another replica could carry out); else the configured id to forward.
   */
  #where(requested: string): "here" | { id: string } {
    const instance = findInstance(this.#deps.config().instances, requested);
    if (instance === undefined || !instance.ActionsEnabled) return "here";
    return this.#deps.cluster.holds(instance.id) ? "here" : { id: instance.id };
  }

  /** To the holder as last seen, or 503 `not-held` when there is none to send it to. */
  #forward(
    where: { id: string },
    message: ForwardMessage,
    what: string,
  ): Promise<Forwarded<ControlOutcome | SettingsOutcome>> {
    const found = findHolder(this.#deps.cluster, this.#deps.config().Cluster.Secret, where.id);
    if (!("holder" in found)) {
      return Promise.resolve(
        refuse(503, found.title, `${found.why}: ${what} was not sent; try again shortly`, {
          retryAfter: NOT_HELD_RETRY_AFTER,
          problem: "not-held",
        }),
      );
    }
    const deps = {
      client: this.#client,
      logger: this.#logger,
      ...(this.#deps.timeoutMs === undefined ? {} : { timeoutMs: this.#deps.timeoutMs }),
    };
    return forwardTo(deps, { ...found.target, instanceId: where.id, holder: found.holder }, message, what);
  }
}
