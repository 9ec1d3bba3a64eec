/**
 * One instance's readings among several replicas (docs/cluster.md, "Reads on any replica"): a
 * replica that does not hold the instance asks the replica that does (the one that polls it) and
 * answers with its status and body. A read that comes from another replica (it names its member in
 * {@link FORWARD_FROM_HEADER}) is answered from this replica's own snapshots and never passed on, so
 * two replicas that disagree for a moment about the holder cannot send a read back and forth.
 */
import type { FastifyReply } from "fastify";
import type { IncomingHttpHeaders } from "node:http";
import { request as httpRequest } from "undici";
import { FORWARD_FROM_HEADER, type ReplicaControl } from "../../control/forward.js";
import { NOT_HELD_RETRY_AFTER } from "../../control/outcomes.js";
import { problem, sendProblem } from "../problem.js";
import { API_PATHS } from "./paths.js";

/** Largest answer passed on, in bytes (one instance's readings). */
const READ_ANSWER_LIMIT = 8 * 1024 * 1024;
/** How long the holder has to answer a read. */
const READ_TIMEOUT_MS = 10_000;

/** Whether a request comes from another replica (then it is answered here, never passed on). */
export function fromReplica(headers: IncomingHttpHeaders): boolean {
  return headers[FORWARD_FROM_HEADER] !== undefined;
}

/** Answers with the holder's answer to `GET /api/v1/readings?instance=<id>`, or 503 with Retry-After. */
export async function readFromHolder(
  replica: ReplicaControl,
  id: string,
  headers: IncomingHttpHeaders,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const unavailable = (why: string) =>
    sendProblem(
      reply,
      problem(503, `the readings of instance ${id} are not available here now: ${why}; try again shortly`),
      {
        "retry-after": String(NOT_HELD_RETRY_AFTER),
      },
    );
  const holder = replica.holderOf(id);
  if (holder === null) return unavailable("no replica holds it (it is changing hands)");
  const url = replica.urlOf(holder);
  if (url === null) return unavailable(`replica ${holder} holds it and advertises no API address`);
  const key = headers["x-api-key"];
  try {
    const answer = await httpRequest(
      new URL(`${API_PATHS.readings}?instance=${encodeURIComponent(id)}`, url),
      {
        method: "GET",
        headers: {
          [FORWARD_FROM_HEADER]: replica.member,
          // Under Api.Oidc.ProtectReads the client's key is what the holder checks.
          ...(typeof key === "string" ? { "x-api-key": key } : {}),
        },
        signal: AbortSignal.timeout(READ_TIMEOUT_MS),
      },
    );
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > READ_ANSWER_LIMIT) throw new Error(`the answer exceeds ${READ_ANSWER_LIMIT} bytes`);
      chunks.push(chunk);
    }
    const type = answer.headers["content-type"];
    return reply
      .code(answer.statusCode)
      .headers({
        "content-type": typeof type === "string" ? type : "application/json",
        "cache-control": "no-store",
      })
      .send(Buffer.concat(chunks));
  } catch {
    return unavailable(`replica ${holder} holding it did not answer`);
  }
}
