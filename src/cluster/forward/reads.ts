/**
 * One instance's readings among several replicas (docs/cluster.md, "REST on any replica"): a
 * replica that does not hold the instance asks the replica that does (the one that polls it), with a
 * signed request of the protocol between replicas (never the client's credentials), and answers
 * with its status and body when the holder signed the answer. The holder answers from its own
 * snapshots (./route.ts) and never passes the read on, so two replicas that disagree for a moment
 * about the holder cannot send a read back and forth.
 */
import type { FastifyReply } from "fastify";
import { NOT_HELD_RETRY_AFTER } from "../../control/outcomes.js";
import { problem, sendProblem } from "../../http/problem.js";
import type { Logger } from "../../log.js";
import { findHolder, type HolderDirectory, type ReplicaClient } from "./client.js";
import { READ_PATH } from "./protocol.js";

/** Largest answer passed on, in bytes (one instance's readings). */
export const READ_ANSWER_LIMIT = 8 * 1024 * 1024;
/** How long the holder has to answer a read. */
export const READ_TIMEOUT_MS = 10_000;

/** Answers with the holder's answer to a read of one instance's readings, or 503 with Retry-After. */
export async function readFromHolder(
  cluster: HolderDirectory,
  secret: () => string,
  client: ReplicaClient,
  logger: Logger,
  id: string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const unavailable = (why: string) =>
    sendProblem(
      reply,
      problem(503, `the readings of instance ${id} are not available here now: ${why}; try again shortly`),
      { "retry-after": String(NOT_HELD_RETRY_AFTER) },
    );
  const found = findHolder(cluster, secret(), id);
  if (!("holder" in found)) return unavailable(found.why);
  const { holder } = found;
  try {
    const answer = await client.send(found.target, {
      path: READ_PATH,
      body: JSON.stringify({ instanceId: id }),
      user: "-",
      limit: READ_ANSWER_LIMIT,
      timeoutMs: READ_TIMEOUT_MS,
    });
    if (!answer.signed) {
      logger.error(
        { instance: id, holder, status: answer.status },
        "forward: a read's answer is not signed for it",
      );
      return unavailable(`replica ${holder} holding it did not answer as a replica of this installation`);
    }
    return reply
      .code(answer.status)
      .headers({
        "content-type": answer.contentType ?? "application/json",
        "cache-control": "no-store",
        ...(answer.status === 503 ? { "retry-after": String(NOT_HELD_RETRY_AFTER) } : {}),
      })
      .send(answer.text);
  } catch {
    return unavailable(`replica ${holder} holding it did not answer`);
  }
}
