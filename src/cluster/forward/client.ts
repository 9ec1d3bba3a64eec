/**
 * The sending end of the protocol between replicas (./protocol.ts): one undici agent for every
 * request this replica sends to another, each signed for the replica it is meant for and its answer
 * read within its limit (../bounded-body.ts) and checked for the holder's signature, and what became
 * of a forward turned into the outcome the client is answered with.
 *
 * - Not reached (connection refused, no route, connect timeout): nothing was carried out, 503
 *   `not-held` with Retry-After.
 * - Sent, and the answer lost (reset, timeout, too large, not an outcome, not signed by the
 *   holder): 502 `outcome-unknown`, whatever the action; never retried.
 * - Refused by the holder (any status but 200): 502 "Forward refused", nothing done there.
 */
import { Agent, request as httpRequest } from "undici";
import { NOT_HELD_RETRY_AFTER, refuse, type Refusal } from "../../control/outcomes.js";
import type { ControlOutcome, SettingsOutcome } from "../../control/types.js";
import type { Logger } from "../../log.js";
import { readBoundedText } from "../bounded-body.js";
import {
  claimedUser,
  FORWARD_ANSWER_LIMIT,
  FORWARD_PATH,
  FORWARD_TIMEOUT_MS,
  parseAnswer,
  type ForwardMessage,
} from "./protocol.js";
import { answerSigned, nonceOf, signRequest } from "./signing.js";

/** An outcome another replica carried out: the member that did, for the surface's log. */
export type Forwarded<O> = O & { readonly carriedOutBy?: string };

/** Network errors raised before a request could reach the other side: nothing was carried out. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** What another replica answered: its status, content type and body (read within the limit). */
export interface ReplicaAnswer {
  readonly status: number;
  readonly contentType: string | null;
  readonly text: string;
  /** Whether the holder signed it for this request (./signing.ts). */
  readonly signed: boolean;
}

/** A request to another replica that failed: `sent` false when it cannot have reached it. */
export class ReplicaRequestError extends Error {
  readonly sent: boolean;
  readonly code: string | null;
  constructor(message: string, sent: boolean, code: string | null) {
    super(message);
    this.name = "ReplicaRequestError";
    this.sent = sent;
    this.code = code;
  }
}

/** A request to another replica: what its signature covers besides the receiver. */
export interface ReplicaRequest {
  readonly path: string;
  readonly body: string;
  readonly user: string;
  readonly limit: number;
  readonly timeoutMs: number;
}

/** The replica a request is meant for, and the secret to sign it with. */
export interface ReplicaTarget {
  /** Its REST API origin (as it advertises it). */
  readonly url: string;
  /** Its identity, `<member>/<incarnation>`, as its member lease names it. */
  readonly identity: string;
  /** This replica's member name (the request's `via`). */
  readonly from: string;
  readonly secret: string;
}

/** The HTTP client of replica-to-replica requests (one connection pool, bounded answers). */
export class ReplicaClient {
  readonly #agent: Agent;

  constructor(timeoutMs: number = FORWARD_TIMEOUT_MS) {
    this.#agent = new Agent({
      connectTimeout: 5000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connections: 64,
    });
  }

  /**
   * Sends one signed POST; throws {@link ReplicaRequestError} when no whole answer came. The answer's
   * `signed` says whether the receiver signed it for this very request.
   */
  async send(target: ReplicaTarget, request: ReplicaRequest): Promise<ReplicaAnswer> {
    const parts = {
      method: "POST",
      path: request.path,
      body: request.body,
      from: target.from,
      to: target.identity,
      user: request.user,
    };
    const signature = signRequest(target.secret, parts);
    try {
      const answer = await httpRequest(new URL(request.path, target.url), {
        method: "POST",
        dispatcher: this.#agent,
        headers: { "content-type": "application/json", ...signature },
        body: request.body,
        signal: AbortSignal.timeout(request.timeoutMs),
      });
      const type = answer.headers["content-type"];
      const text = await readBoundedText(answer.body, request.limit);
      const status = answer.statusCode;
      return {
        status,
        contentType: typeof type === "string" ? type : null,
        text,
        signed: answerSigned(target.secret, nonceOf(signature), status, text, answer.headers),
      };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const known = typeof code === "string" ? code : null;
      throw new ReplicaRequestError(describe(error), !(known !== null && NOT_SENT.has(known)), known);
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

export interface ForwarderDeps {
  readonly client: ReplicaClient;
  readonly logger: Logger;
  /** Overrides {@link FORWARD_TIMEOUT_MS} (tests). */
  readonly timeoutMs?: number;
}

/** Who carries a forward out: the instance and its holder, and where to reach that replica. */
export interface ForwardTarget extends ReplicaTarget {
  readonly instanceId: string;
  readonly holder: string;
}

/** What finding the holder needs of the cluster. */
export interface HolderDirectory {
  /** This replica's member name. */
  readonly member: string;
  holderOf(instanceId: string): string | null;
  /** The REST API origin a member advertises, when it is within `Cluster.PeerNetworks`. */
  urlOf(member: string): string | null;
  /** `<member>/<incarnation>` of a member alive as last seen, or null. */
  identityOf(member: string): string | null;
}

/** The holder of an instance and how to reach it, or why there is none to send to (nothing sent). */
export function findHolder(
  cluster: HolderDirectory,
  secret: string,
  instanceId: string,
):
  | { readonly holder: string; readonly target: ReplicaTarget }
  | { readonly title: string; readonly why: string } {
  const holder = cluster.holderOf(instanceId);
  if (holder === null) {
    return {
      title: "Instance not held",
      why: `no replica holds instance ${instanceId} now (it is changing hands)`,
    };
  }
  const url = cluster.urlOf(holder);
  const identity = cluster.identityOf(holder);
  if (url === null || identity === null) {
    return {
      title: "Instance not reachable",
      why: `instance ${instanceId} is held by replica ${holder}, which advertises no API address within Cluster.PeerNetworks (Cluster.AdvertiseUrl, Api.Enabled)`,
    };
  }
  if (secret === "") {
    return {
      title: "Instance held elsewhere",
      why: `instance ${instanceId} is held by replica ${holder}; handing requests to another replica needs SERVICE_CLUSTER_SECRET`,
    };
  }
  return { holder, target: { url, identity, from: cluster.member, secret } };
}

/** Sends a message to the holder and turns what came back into the client's outcome. */
export async function forwardTo(
  deps: ForwarderDeps,
  target: ForwardTarget,
  message: ForwardMessage,
  what: string,
): Promise<Forwarded<ControlOutcome | SettingsOutcome>> {
  const { holder, instanceId } = target;
  const body = JSON.stringify(message);
  const log = { instance: instanceId, holder, kind: message.kind };
  let answer: ReplicaAnswer;
  try {
    answer = await deps.client.send(target, {
      path: FORWARD_PATH,
      body,
      user: claimedUser(message.source),
      limit: FORWARD_ANSWER_LIMIT,
      timeoutMs: deps.timeoutMs ?? FORWARD_TIMEOUT_MS,
    });
  } catch (error) {
    const failure = error as ReplicaRequestError;
    if (!failure.sent) {
      deps.logger.warn({ ...log, error: failure.code }, "forward: the holder did not take the connection");
      return refuse(
        503,
        "Instance not reachable",
        `replica ${holder} holding instance ${instanceId} could not be reached: ${what} was not sent; try again shortly`,
        { retryAfter: NOT_HELD_RETRY_AFTER, problem: "not-held" },
      );
    }
    deps.logger.warn({ ...log, error: failure.message }, "forward: the holder's answer was lost");
    return lost(holder, instanceId, what);
  }
  if (answer.status !== 200) {
    // 401 (the replicas' secrets differ) or 400 (the replicas' versions differ): refused there.
    deps.logger.error({ ...log, status: answer.status }, "forward: refused by the holder");
    return refuse(
      502,
      "Forward refused",
      `replica ${holder} holding instance ${instanceId} refused to carry out ${what} (HTTP ${answer.status}): nothing was done; check that every replica runs the same version with the same SERVICE_CLUSTER_SECRET`,
    );
  }
  if (!answer.signed) {
    // Someone answered who cannot sign for the request: not a replica of this installation.
    deps.logger.error(log, "forward: the holder's answer is not signed for the request");
    return lost(holder, instanceId, what);
  }
  const outcome = parseAnswer(answer.text);
  if (outcome === null) {
    deps.logger.error(log, "forward: the holder's answer is not an outcome");
    return lost(holder, instanceId, what);
  }
  return { ...outcome, carriedOutBy: holder };
}

/** 502 outcome-unknown: the request may have been carried out by the holder. Never retried. */
function lost(holder: string, id: string, what: string): Refusal {
  return refuse(
    502,
    "Outcome unknown",
    `the answer of replica ${holder} holding instance ${id} was lost: ${what} may or may not have been carried out; check the outlet before trying again`,
    { problem: "outcome-unknown" },
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
