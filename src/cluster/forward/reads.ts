/**
 * One instance's readings among several replicas (docs/cluster.md, "REST on any replica"): a
 * replica that does not hold the instance asks the replica that does (the one that polls it) and
 * answers with its status and body. A read that comes from another replica (it names its member in
 * {@link FORWARD_FROM_HEADER}) is answered from this replica's own snapshots and never passed on, so
 * two replicas that disagree for a moment about the holder cannot send a read back and forth.
 */
import type { FastifyReply } from "fastify";
import type { IncomingHttpHeaders } from "node:http";
import { NOT_HELD_RETRY_AFTER } from "../../control/outcomes.js";
import { API_PATHS } from "../../http/api/paths.js";
import { problem, sendProblem } from "../../http/problem.js";
import type { ReplicaClient } from "./client.js";
import { FORWARD_FROM_HEADER } from "./protocol.js";

/** Largest answer passed on, in bytes (one instance's readings). */
export const READ_ANSWER_LIMIT = 8 * 1024 * 1024;
/** How long the holder has to answer a read. */
export const READ_TIMEOUT_MS = 10_000;

/** Whether a request comes from another replica (then it is answered here, never passed on). */
export function fromReplica(headers: IncomingHttpHeaders): boolean {
  return headers[FORWARD_FROM_HEADER] !== undefined;
}

/** What reading from the holder needs of the cluster. */
export interface ReadingCluster {
  readonly member: string;
  holderOf(instanceId: string): string | null;
  urlOf(member: string): string | null;
}

/** Answers with the holder's answer to `GET /api/v1/readings?instance=<id>`, or 503 with Retry-After. */
export async function readFromHolder(
  cluster: ReadingCluster,
  client: ReplicaClient,
  id: string,
  headers: IncomingHttpHeaders,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const unavailable = (why: string) =>
    sendProblem(
      reply,
      problem(503, `the readings of instance ${id} are not available here now: ${why}; try again shortly`),
      { "retry-after": String(NOT_HELD_RETRY_AFTER) },
    );
  const holder = cluster.holderOf(id);
  if (holder === null) return unavailable("no replica holds it (it is changing hands)");
  const url = cluster.urlOf(holder);
  if (url === null) return unavailable(`replica ${holder} holds it and advertises no API address`);
  const key = headers["x-api-key"];
  try {
    const answer = await client.send(
      new URL(`${API_PATHS.readings}?instance=${encodeURIComponent(id)}`, url),
      {
        method: "GET",
        headers: {
          [FORWARD_FROM_HEADER]: cluster.member,
          // Under Api.Oidc.ProtectReads the client's key is what the holder checks.
          ...(typeof key === "string" ? { "x-api-key": key } : {}),
        },
        limit: READ_ANSWER_LIMIT,
        timeoutMs: READ_TIMEOUT_MS,
      },
    );
    return reply
      .code(answer.status)
      .headers({ "content-type": answer.contentType ?? "application/json", "cache-control": "no-store" })
      .send(answer.text);
  } catch {
    return unavailable(`replica ${holder} holding it did not answer`);
  }
}
