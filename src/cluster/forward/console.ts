/**
 * The asking end of the web console's traffic between replicas (docs/console.md, "Among several
 * replicas"): who holds an instance, which other replicas there are, and one signed ask of another
 * replica's console (./protocol.ts `CONSOLE_PATH`; ./route.ts answers it from that replica's own
 * console). The console (src/ui/replicas.ts) asks each other replica once per round, never once per
 * instance, and checks every field of the answer before it shows anything: here the answer is only
 * taken when the replica it was meant for signed it.
 */
import { type HolderDirectory, type ReplicaClient } from "./client.js";
import { CONSOLE_PATH, type ConsoleAsk } from "./protocol.js";

/** Largest console answer read, in bytes (the statuses of every instance a replica holds). */
export const CONSOLE_ANSWER_LIMIT = 8 * 1024 * 1024;
/** How long another replica has to answer a console ask. */
export const CONSOLE_TIMEOUT_MS = 5000;

/** What the console's asks need of the cluster. */
export interface ConsoleCluster extends HolderDirectory {
  holds(instanceId: string): boolean;
  status(): { readonly members: readonly { readonly name: string; readonly self: boolean }[] };
}

/** Another replica's answer (its identity, which signed it, and the text), or why there is none. */
export type ConsoleAnswer =
  | { readonly ok: true; readonly identity: string; readonly text: string }
  | { readonly ok: false; readonly why: string };

/** What the console of a replica asks of the cluster and of the other replicas. */
export interface ConsolePeers {
  /** This replica's member name. */
  readonly member: string;
  holds(instanceId: string): boolean;
  /** The member holding an instance as last seen (this replica's name when it holds it), or null. */
  holderOf(instanceId: string): string | null;
  /** The other members alive as last seen, by name. */
  peers(): readonly string[];
  /** `<member>/<incarnation>` of a member alive as last seen (the one an ask is signed for), or null. */
  identityOf(member: string): string | null;
  /** One signed ask of a member's console; never throws. */
  ask(member: string, ask: ConsoleAsk): Promise<ConsoleAnswer>;
}

export function consolePeers(
  cluster: ConsoleCluster,
  secret: () => string,
  client: ReplicaClient,
): ConsolePeers {
  return {
    member: cluster.member,
    holds: (id) => cluster.holds(id),
    holderOf: (id) => (cluster.holds(id) ? cluster.member : cluster.holderOf(id)),
    peers: () =>
      cluster
        .status()
        .members.filter((m) => !m.self)
        .map((m) => m.name),
    identityOf: (member) => cluster.identityOf(member),
    async ask(member, ask) {
      const url = cluster.urlOf(member);
      const identity = cluster.identityOf(member);
      if (url === null || identity === null) {
        return {
          ok: false,
          why: `replica ${member} advertises no API address within Cluster.PeerNetworks`,
        };
      }
      const key = secret();
      if (key === "") return { ok: false, why: "asking other replicas needs SERVICE_CLUSTER_SECRET" };
      try {
        const answer = await client.send(
          { url, identity, from: cluster.member, secret: key },
          {
            path: CONSOLE_PATH,
            body: JSON.stringify(ask),
            user: "-",
            limit: CONSOLE_ANSWER_LIMIT,
            timeoutMs: CONSOLE_TIMEOUT_MS,
          },
        );
        if (!answer.signed)
          return { ok: false, why: `replica ${member} did not answer as a replica of this installation` };
        if (answer.status !== 200)
          return { ok: false, why: `replica ${member} answered HTTP ${answer.status}` };
        return { ok: true, identity, text: answer.text };
      } catch (error) {
        return { ok: false, why: `replica ${member} did not answer (${(error as Error).message})` };
      }
    },
  };
}
