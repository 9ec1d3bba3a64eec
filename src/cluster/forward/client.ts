/**
 * The sending end of the protocol between replicas (./protocol.ts): one undici agent for every
 * request this replica sends to another, each answer read within its limit (../bounded-body.ts),
 * and what became of a forward turned into the outcome the client is answered with.
 *
 * - Not reached (connection refused, no route, connect timeout): nothing was carried out, 503
 *   `not-held` with Retry-After.
 * - Sent, and the answer lost (reset, timeout, too large, not an outcome): 502 `outcome-unknown`,
 *   whatever the action; never retried.
 * - Refused by the holder (any status but 200): 502 "Forward refused", nothing done there.
 */
import { Agent, request as httpRequest } from "undici";
import { NOT_HELD_RETRY_AFTER, refuse, type Refusal } from "../../control/outcomes.js";
import type { ControlOutcome, SettingsOutcome } from "../../control/types.js";
import type { Logger } from "../../log.js";
import { readBoundedText } from "../bounded-body.js";
import {
  FORWARD_ANSWER_LIMIT,
  FORWARD_FROM_HEADER,
  FORWARD_PATH,
  FORWARD_SIGNATURE_HEADER,
  FORWARD_TIMEOUT_MS,
  parseAnswer,
  signForward,
  type ForwardMessage,
} from "./protocol.js";

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

export interface ReplicaRequest {
  readonly method: "GET" | "POST";
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly limit: number;
  readonly timeoutMs: number;
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

  /** Sends one request; throws {@link ReplicaRequestError} when no whole answer came. */
  async send(url: URL, request: ReplicaRequest): Promise<ReplicaAnswer> {
    try {
      const answer = await httpRequest(url, {
        method: request.method,
        dispatcher: this.#agent,
        headers: request.headers,
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: AbortSignal.timeout(request.timeoutMs),
      });
      const type = answer.headers["content-type"];
      const text = await readBoundedText(answer.body, request.limit);
      return { status: answer.statusCode, contentType: typeof type === "string" ? type : null, text };
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
  /** This replica's member name (the `from` of every forward). */
  readonly member: string;
  readonly logger: Logger;
  /** Overrides {@link FORWARD_TIMEOUT_MS} (tests). */
  readonly timeoutMs?: number;
}

/** Who carries a forward out: the instance, its holder and the holder's URL. */
export interface ForwardTarget {
  readonly instanceId: string;
  readonly holder: string;
  readonly url: string;
  /** The shared secret forwards are signed with. */
  readonly secret: string;
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
    answer = await deps.client.send(new URL(FORWARD_PATH, target.url), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        [FORWARD_SIGNATURE_HEADER]: signForward(target.secret, body),
        [FORWARD_FROM_HEADER]: deps.member,
      },
      body,
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
      `replica ${holder} holding instance ${instanceId} refused to carry out ${what} (HTTP ${answer.status}): nothing was done; check that every replica runs the same version with the same Api.ApiKey`,
    );
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
