/** A sequence service's answer as a REST answer: its body with its status, or a problem. */
import type { FastifyReply } from "fastify";
import type { SequenceAnswer } from "../../../control/sequences.js";
import { problem, sendProblem } from "../../problem.js";

/** Retry-After of a 503 when none is given (seconds). */
const DEFAULT_RETRY_AFTER = 5;

export function sendSequenceAnswer(reply: FastifyReply, answer: SequenceAnswer): FastifyReply {
  if (answer.ok) return reply.code(answer.status).send(answer.body);
  const headers: Record<string, string> =
    answer.status === 503
      ? { "retry-after": String(Math.max(1, Math.ceil(answer.retryAfter ?? DEFAULT_RETRY_AFTER))) }
      : {};
  return sendProblem(reply, problem(answer.status, answer.detail, answer.title), headers);
}
