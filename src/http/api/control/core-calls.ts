/**
 * A control route's request through the control core: everything else (instance, ActionsEnabled,
 * snapshot, target, the PDU's answer) is decided there; this file only translates its outcome.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { SETTINGS_ACTION } from "../../../control/settings.js";
import type {
  ControlOutcome,
  ControlService,
  ControlSource,
  ControlTarget,
  OutletResult,
  SettingsOutcome,
} from "../../../control/types.js";
import { problem, PROBLEM_TYPE_PREFIX, sendProblem } from "../../problem.js";
import type { HttpDeps } from "../../types.js";
import type { ControlAudit } from "./audit.js";
import { type Params, targetOf } from "./requests.js";

/** Retry-After of a 503 when the core gives none (seconds). */
const DEFAULT_RETRY_AFTER = 5;

type Answer = Promise<FastifyReply | object>;

/** What a route handler passes on: the request, its reply, the service and the audit. */
export interface CoreCall {
  readonly deps: HttpDeps;
  readonly audit: ControlAudit;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
}

function outletResults(outlets: readonly OutletResult[]) {
  return outlets.map((o) => ({
    deviceId: o.deviceId,
    index: o.index,
    ok: o.ok,
    ...(o.error === undefined ? {} : { error: o.error }),
  }));
}

/** A refusal or failure of the core as a problem (503 with Retry-After). */
function sendRefusal(reply: FastifyReply, outcome: Extract<ControlOutcome, { ok: false }>) {
  const headers: Record<string, string> =
    outcome.status === 503
      ? { "retry-after": String(Math.max(1, Math.ceil(outcome.retryAfter ?? DEFAULT_RETRY_AFTER))) }
      : {};
  const extensions = outcome.outlets ? { outlets: outletResults(outcome.outlets) } : {};
  const body = problem(outcome.status, outcome.detail, outcome.title, extensions);
  // A specific kind (outcome-unknown, superseded, ...) names the problem type.
  const typed =
    outcome.problem === undefined ? body : { ...body, type: PROBLEM_TYPE_PREFIX + outcome.problem };
  return sendProblem(reply, typed, headers);
}

/** 503 (audited) when no control service is attached to this process. */
function unavailable({ audit, request, reply }: CoreCall, action: string, what: string) {
  const detail = `${what} is not available in this process; try again later or check the service's log`;
  audit.record(request, 503, action, detail);
  return sendProblem(reply, problem(503, detail), { "retry-after": String(DEFAULT_RETRY_AFTER) });
}

/**
 * One request through the control core, the same for commands and settings writes: 503 (audited)
 * when this process has no core or `call` finds nothing to call there (it returns undefined);
 * else the outcome is audited, a refusal answered as a problem and a success as `answer` builds it.
 */
async function throughCore<O extends ControlOutcome | SettingsOutcome>(
  at: CoreCall,
  action: string,
  what: string,
  call: (control: ControlService, source: ControlSource) => Promise<O> | undefined,
  answer: (done: Extract<O, { ok: true }>) => object,
): Answer {
  const source = at.audit.sourceOf(at.request);
  const pending = at.deps.control === undefined ? undefined : call(at.deps.control, source);
  if (pending === undefined) return unavailable(at, action, what);
  const outcome: O & { readonly carriedOutBy?: string } = await pending;
  // Carried out by another replica (several replicas): that replica wrote the audit line.
  if (outcome.carriedOutBy === undefined) at.audit.outcome(at.request, action, outcome);
  else at.audit.forwarded(at.request, action, outcome.carriedOutBy, outcome.status);
  if (!outcome.ok) return sendRefusal(at.reply, outcome);
  // Narrowing on `ok` does not reach the type parameter, so the success is named here.
  return answer(outcome as Extract<O, { ok: true }>);
}

/** A settings write through the core; 200 echoes the settings written. */
export function applySettings(at: CoreCall): Answer {
  // The route's schema has checked the parameters (so there is a target) and the body.
  const params = at.request.params as Params;
  const target = targetOf(params);
  const instanceId = params.id ?? "";
  const settings = at.request.body as Readonly<Record<string, unknown>>;
  if (target === null) throw new Error("settings route without a target");
  return throughCore(
    at,
    SETTINGS_ACTION,
    "writing settings",
    (control, source) => control.applySettings?.({ instanceId, target, settings, source }),
    (done) => {
      const { kind: _kind, ...where } = done.target;
      return { ok: true, instanceId: done.instanceId, ...where, settings: done.settings };
    },
  );
}

/** A command through the core; 200 names what was done. */
export function execute(at: CoreCall, instanceId: string, target: ControlTarget, action: string): Answer {
  return throughCore(
    at,
    action,
    "control",
    (control, source) => control.execute({ instanceId, target, action, source }),
    (done) =>
      done.target.kind === "outlet"
        ? {
            ok: true,
            instanceId: done.instanceId,
            deviceId: done.target.deviceId,
            index: done.target.index,
            action: done.action,
          }
        : {
            ok: true,
            instanceId: done.instanceId,
            groupKey: done.target.groupKey,
            action: done.action,
            outlets: done.outlets.map((o) => ({ deviceId: o.deviceId, index: o.index })),
          },
  );
}
