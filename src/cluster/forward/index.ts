/**
 * Replica-to-replica traffic in one place (docs/cluster.md, "REST on any replica"): the protocol
 * (./protocol.ts), its sending end (./client.ts), its receiving end (./route.ts), the decision where a
 * control request runs (./control.ts) and one instance's readings asked of its holder (./reads.ts).
 * The composition root builds it with `Cluster.Enabled` and hands the REST surface two things: the
 * control service to call, and the {@link ReplicaSurface} (src/http/types.ts) it serves.
 */
import type { Config } from "../../config/schema.js";
import type { ControlService } from "../../control/types.js";
import type { ReplicaSurface } from "../../http/types.js";
import type { Logger } from "../../log.js";
import { ReplicaClient } from "./client.js";
import { ForwardingControl, type ForwardingCluster } from "./control.js";
import { readFromHolder } from "./reads.js";
import { replicaRoute } from "./route.js";

export interface ReplicaForwardingDeps {
  readonly config: () => Config;
  /** This replica's own control core. */
  readonly local: ControlService;
  readonly cluster: ForwardingCluster & { readonly identity: string };
  readonly logger: Logger;
}

export interface ReplicaForwarding {
  /** What the REST surface calls for control (runs here, or at the holder). */
  readonly service: ForwardingControl;
  /** What the REST surface serves and asks among replicas. */
  readonly surface: ReplicaSurface;
  close(): Promise<void>;
}

export function createReplicaForwarding(deps: ReplicaForwardingDeps): ReplicaForwarding {
  const client = new ReplicaClient();
  const service = new ForwardingControl(deps, client);
  const { cluster, local, logger } = deps;
  const replica = {
    member: cluster.member,
    identity: cluster.identity,
    holds: (id: string) => cluster.holds(id),
    local,
  };
  const secret = () => deps.config().Cluster.Secret;
  const forwardLog = logger.child({ component: "forward" });
  const surface: ReplicaSurface = {
    holds: (id) => cluster.holds(id),
    readFromHolder: (id, reply) => readFromHolder(cluster, secret, client, forwardLog, id, reply),
    routes: async (app, httpDeps, readings) => {
      await app.register(replicaRoute, { deps: httpDeps, replica, readings });
    },
  };
  return { service, surface, close: () => service.close() };
}
