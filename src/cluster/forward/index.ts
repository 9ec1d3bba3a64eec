/**
 * Replica-to-replica traffic in one place (docs/cluster.md, "REST on any replica"): the protocol
 * (./protocol.ts), its sending end (./client.ts), its receiving end (./route.ts), the decision where a
 * control request runs (./control.ts), one instance's readings asked of its holder (./reads.ts) and
 * the web console's asks of the other replicas (./console.ts). The composition root builds it with
 * `Cluster.Enabled` and hands the REST surface two things: the control service to call, and the
 * {@link ReplicaSurface} (src/http/types.ts) it serves; and the console its {@link ConsolePeers}.
 */
import type { Config } from "../../config/schema.js";
import type { ControlService } from "../../control/types.js";
import type { ReplicaSurface } from "../../http/types.js";
import type { Logger } from "../../log.js";
import { ReplicaClient } from "./client.js";
import { consolePeers, type ConsoleCluster, type ConsolePeers } from "./console.js";
import { ForwardingControl, type ForwardingCluster } from "./control.js";
import { readFromHolder } from "./reads.js";
import type { ConsoleAsk } from "./protocol.js";
import { replicaRoute } from "./route.js";

export type { ConsoleAnswer, ConsolePeers } from "./console.js";
export type { ConsoleAsk } from "./protocol.js";

export interface ReplicaForwardingDeps {
  readonly config: () => Config;
  /** This replica's own control core. */
  readonly local: ControlService;
  readonly cluster: ForwardingCluster & ConsoleCluster & { readonly identity: string };
  readonly logger: Logger;
  /** What this replica's web console shows of the instances it holds, as JSON; null without one. */
  readonly console: (ask: ConsoleAsk) => string | null;
}

export interface ReplicaForwarding {
  /** What the REST surface calls for control (runs here, or at the holder). */
  readonly service: ForwardingControl;
  /** What the REST surface serves and asks among replicas. */
  readonly surface: ReplicaSurface;
  /** What the web console asks of the cluster and of the other replicas. */
  readonly console: ConsolePeers;
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
    console: deps.console,
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
  return { service, surface, console: consolePeers(cluster, secret, client), close: () => service.close() };
}
