/**
 * The one control fake: a ControlService that records every request and answers canned outcomes
 * per target, else its fallback (default: 404; `new ControlStub(done)` answers every request done).
 * For tests of the surfaces (REST status mapping, MQTT command parsing); the real control core is
 * tested end to end elsewhere.
 */
import type { ControlOutcome, ControlRequest, ControlService, ControlTarget } from "../src/control/types.js";

/** `outlet:<deviceId>/<index>` or `group:<groupKey>`, for `on(...)`. */
export function targetKey(instanceId: string, target: ControlTarget): string {
  return target.kind === "outlet"
    ? `${instanceId} outlet:${target.deviceId}/${target.index}`
    : `${instanceId} group:${target.groupKey}`;
}

export class ControlStub implements ControlService {
  readonly requests: ControlRequest[] = [];
  readonly #outcomes = new Map<string, (request: ControlRequest) => ControlOutcome>();
  readonly #fallback: ((request: ControlRequest) => ControlOutcome) | undefined;

  constructor(fallback?: (request: ControlRequest) => ControlOutcome) {
    this.#fallback = fallback;
  }

  /** Answer requests for this instance and target with `outcome` (a function gets the request). */
  on(
    instanceId: string,
    target: ControlTarget,
    outcome: ControlOutcome | ((r: ControlRequest) => ControlOutcome),
  ): this {
    this.#outcomes.set(
      targetKey(instanceId, target),
      typeof outcome === "function" ? outcome : () => outcome,
    );
    return this;
  }

  execute(request: ControlRequest): Promise<ControlOutcome> {
    this.requests.push(request);
    const canned = this.#outcomes.get(targetKey(request.instanceId, request.target));
    if (canned) return Promise.resolve(canned(request));
    if (this.#fallback) return Promise.resolve(this.#fallback(request));
    return Promise.resolve({
      ok: false,
      status: 404,
      title: "Not Found",
      detail: `stub: no outcome for ${targetKey(request.instanceId, request.target)}`,
    });
  }
}

/** The outcome of a control request that was done, as the core reports it. */
export function done(request: ControlRequest): ControlOutcome {
  const outlets =
    request.target.kind === "outlet"
      ? [{ deviceId: request.target.deviceId, index: request.target.index, ok: true }]
      : [];
  return {
    ok: true,
    status: 200,
    instanceId: request.instanceId,
    target: request.target,
    action: request.action,
    outlets,
  };
}
