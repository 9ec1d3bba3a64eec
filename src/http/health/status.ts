/**
 * Readiness and the integrations report, as pure functions of the service's state so that the
 * rules can be read (and tested) in one place. See docs/http.md "Health rules".
 */
import type { MemberView } from "../../cluster-status.js";
import type { ParseWarning } from "../../pdu/model.js";
import type { InstanceStatus } from "../../poller/store.js";
import type { ClusterHealth, HttpDeps, WebhookHealth } from "../types.js";

/** How long a successful poll keeps an instance fresh: max(30 s, 3 × its PollInterval). */
export function freshnessLimitMs(pollIntervalSeconds: number): number {
  return Math.max(30_000, 3 * pollIntervalSeconds * 1000);
}

const seconds = (ms: number): string => `${Math.floor(ms / 1000)}s`;

function limitOf(deps: HttpDeps, id: string): number {
  const instance = deps.config.instances.find((i) => i.id === id);
  return freshnessLimitMs(instance?.PollInterval ?? 0);
}

export type Readiness = { readonly ready: true } | { readonly ready: false; readonly reason: string };

/**
 * READY when MQTT is connected, the REST API (when on) answers, and at least one instance had a
 * successful poll within its limit. The REST API does not answer while its worker thread
 * (`Api.Worker`) is dead or hung and being started again: `apiOutage` says so, and is the reason.
 * A replica of a cluster is READY when MQTT is connected, the REST API answers and the coordination
 * engine answered within RenewDeadline: what it polls is its buckets' business (a standby polls
 * nothing), and a replica without the engine holds nothing.
 */
export function readiness(deps: HttpDeps, now: number): Readiness {
  if (!deps.mqttStatus().connected) return { ready: false, reason: "MQTT not connected" };
  const apiOutage = deps.config.Api.Enabled ? (deps.apiOutage?.() ?? null) : null;
  if (apiOutage !== null) return { ready: false, reason: apiOutage };
  const cluster = deps.clusterStatus?.();
  if (cluster !== undefined) {
    return cluster.reachable ? { ready: true } : { ready: false, reason: engineUnreachable(cluster) };
  }
  const polled = deps.store.list().filter((s) => s.lastSuccessUtc !== null);
  if (polled.length === 0) return { ready: false, reason: "no successful PDU poll yet" };
  if (polled.some((s) => now - (s.lastSuccessUtc ?? 0) <= limitOf(deps, s.id))) return { ready: true };
  const latest = polled.reduce((a, b) => ((b.lastSuccessUtc ?? 0) > (a.lastSuccessUtc ?? 0) ? b : a));
  const age = now - (latest.lastSuccessUtc ?? 0);
  return {
    ready: false,
    reason: `last PDU poll ${seconds(age)} ago (limit ${seconds(limitOf(deps, latest.id))})`,
  };
}

export type IntegrationState = "healthy" | "degraded" | "unhealthy";

export interface Integration {
  readonly status: IntegrationState;
  readonly detail: string;
  /**
   * A PDU's malformed optional parts that its latest snapshot dropped (JSON path and problem);
   * present only when there are some. See docs/reliability.md "Essential and optional parts".
   */
  readonly warnings?: ParseWarning[];
  /**
   * A PDU whose login (checked at start, for control) was refused: why, and the variable or key to
   * fix; present only then. Polling needs no login, so the PDU is degraded, not unhealthy.
   */
  readonly login?: string;
}

/** The `cluster` entry (`Cluster.Enabled`): this replica's part of the cluster besides status and detail. */
export interface ClusterIntegration
  extends
    Integration,
    Pick<
      ClusterHealth,
      "member" | "backend" | "engine" | "buckets" | "instances" | "transitions" | "lastError"
    > {
  /** The members as the report shows them (without `self`). */
  readonly members: readonly Pick<MemberView, "name" | "ready">[];
  /** Other members whose renewals stopped: when this replica last saw them renew. */
  readonly stoppedRenewing: readonly { readonly member: string; readonly secondsAgo: number }[];
  /**
   * The configured instances nobody polls now, until a replica takes them over: held by nobody,
   * or by a member that stopped renewing (`holder`), whose lease is running out.
   */
  readonly unpolled: readonly { readonly instance: string; readonly holder: string | null }[];
}

export interface IntegrationsReport {
  readonly status: IntegrationState;
  readonly integrations: Readonly<Record<string, Integration>>;
}

/**
 * The poll rules below, plus the latest snapshot's parse warnings and a refused login (either makes
 * a healthy PDU degraded).
 */
function pduIntegration(
  status: InstanceStatus,
  limitMs: number,
  now: number,
  login: string | null,
): Integration {
  const parsed = parsedIntegration(status, limitMs, now);
  if (login === null) return parsed;
  return {
    ...parsed,
    status: parsed.status === "healthy" ? "degraded" : parsed.status,
    detail: `${parsed.detail}; control will fail: ${login}`,
    login,
  };
}

/** The poll rules below, plus the latest snapshot's parse warnings (which make a healthy PDU degraded). */
function parsedIntegration(status: InstanceStatus, limitMs: number, now: number): Integration {
  const polled = pollIntegration(status, limitMs, now);
  const warnings = status.snapshot?.warnings;
  if (warnings === undefined || warnings.length === 0) return polled;
  const first = warnings[0];
  const note =
    `; ${warnings.length} malformed optional part(s) of its answer dropped` +
    (first === undefined ? "" : `, first: ${first.path}: ${first.problem}`);
  return {
    status: polled.status === "healthy" ? "degraded" : polled.status,
    detail: `${polled.detail}${note}`,
    warnings: [...warnings],
  };
}

function pollIntegration(status: InstanceStatus, limitMs: number, now: number): Integration {
  const failures = status.consecutiveFailures;
  const error = status.lastError ?? "unknown error";
  if (status.lastSuccessUtc === null) {
    return failures === 0
      ? { status: "degraded", detail: "waiting for the first poll" }
      : { status: "unhealthy", detail: `no successful poll yet; ${failures} failed, last: ${error}` };
  }
  const age = now - status.lastSuccessUtc;
  if (age > limitMs) {
    const last = failures > 0 ? `; ${failures} failed since, last: ${error}` : "";
    return {
      status: "unhealthy",
      detail: `last successful poll ${seconds(age)} ago (limit ${seconds(limitMs)})${last}`,
    };
  }
  if (failures > 0) {
    return {
      status: "degraded",
      detail: `${failures} failed poll(s) since the last success ${seconds(age)} ago, last: ${error}`,
    };
  }
  return { status: "healthy", detail: `last successful poll ${seconds(age)} ago` };
}

/** Why the engine counts as unreachable, for readiness and the `cluster` entry. */
function engineUnreachable(cluster: ClusterHealth): string {
  // RenewDeadline as configured (it may be below a second: 0.5s).
  const limit = `${cluster.renewDeadlineMs / 1000}s`;
  return cluster.lastAnswerAgeMs === null
    ? `coordination engine not reachable (no answer yet, limit ${limit})`
    : `coordination engine not reachable (last answer ${seconds(cluster.lastAnswerAgeMs)} ago, limit ${limit})`;
}

/** Longest engine error the report repeats (the log has it whole). */
const MAX_ENGINE_ERROR_CHARS = 300;

/** A text without the user info of any URL in it (`scheme://user:password@host` → `scheme://host`). */
export function withoutUserInfo(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/gi, "$1");
}

/** Instance ids a detail names at most (the `unpolled` field lists every one). */
const UNPOLLED_NAMED = 10;

/**
 * What the detail says of the others' renewals: each member that stopped renewing, and the
 * instances nobody polls, by the member whose lease is running out (or nobody).
 */
function renewalNotes(cluster: ClusterHealth): string[] {
  const notes = cluster.silent.map((m) => `member ${m.name} stopped renewing ${seconds(m.silentForMs)} ago`);
  const { unpolledInstances: unpolled } = cluster;
  if (unpolled.length === 0) return notes;
  const named = unpolled.slice(0, UNPOLLED_NAMED).map((u) => u.id);
  const more = unpolled.length > UNPOLLED_NAMED ? ` and ${unpolled.length - UNPOLLED_NAMED} more` : "";
  const whose = new Map<string, number>();
  for (const bucket of cluster.unpolled) {
    const key = bucket.holder ?? "";
    whose.set(key, Math.max(whose.get(key) ?? 0, bucket.freeInMs));
  }
  const held = [...whose]
    .filter(([holder]) => unpolled.some((u) => (u.holder ?? "") === holder))
    .map(([holder, freeIn]) =>
      holder === ""
        ? "held by nobody"
        : `held by ${holder}, which stopped renewing: its lease${freeIn > 0 ? ` runs out within ${Math.ceil(freeIn / 1000)}s` : " ran out"}`,
    );
  notes.push(
    `${unpolled.length} instance(s) polled by nobody until a replica takes them over: ${named.join(", ")}${more} (${held.join("; ")})`,
  );
  return notes;
}

/**
 * This replica's part of the cluster: healthy while the engine answers, it runs and every instance
 * is polled by some replica; degraded while it starts, stops or may hold nothing (another bucket
 * count, its name taken), and while instances are polled by nobody (their holder stopped renewing,
 * until a replica takes them over); unhealthy while the engine does not answer (it then holds
 * nothing).
 */
export function clusterIntegration(cluster: ClusterHealth): ClusterIntegration {
  const lastError =
    cluster.lastError === null ? null : withoutUserInfo(cluster.lastError).slice(0, MAX_ENGINE_ERROR_CHARS);
  const holds = `holds ${cluster.buckets.length} of ${cluster.bucketCount} buckets (${cluster.instances.length} instances)`;
  const sees = `${cluster.members.length} member(s) seen; ${cluster.transitions} lease transition(s)`;
  const what = [`member ${cluster.member}, ${holds}; ${sees}`, ...renewalNotes(cluster)].join("; ");
  const [status, detail]: [IntegrationState, string] = !cluster.reachable
    ? ["unhealthy", `${engineUnreachable(cluster)}${lastError === null ? "" : `: ${lastError}`}; ${what}`]
    : cluster.blocked !== null
      ? ["degraded", `holds nothing: ${cluster.blocked}; ${what}`]
      : cluster.state !== "running"
        ? ["degraded", `${cluster.state}; ${what}`]
        : [cluster.unpolledInstances.length > 0 ? "degraded" : "healthy", what];
  return {
    status,
    detail,
    member: cluster.member,
    backend: cluster.backend,
    engine: withoutUserInfo(cluster.engine),
    buckets: [...cluster.buckets],
    instances: [...cluster.instances],
    members: cluster.members.map((m) => ({ name: m.name, ready: m.ready })),
    transitions: cluster.transitions,
    lastError,
    stoppedRenewing: cluster.silent.map((m) => ({
      member: m.name,
      secondsAgo: Math.floor(m.silentForMs / 1000),
    })),
    unpolled: cluster.unpolledInstances.map((u) => ({ instance: u.id, holder: u.holder })),
  };
}

/**
 * The status of every integration and the overall status: unhealthy when MQTT is down, the
 * coordination engine is unreachable (a replica of a cluster), or every PDU is unhealthy; degraded
 * when anything else is not healthy; else healthy. A replica of a cluster reports the PDUs of the
 * buckets it holds (the others are another replica's).
 */
/** A webhook receiver: degraded while it does not take events (they wait, in order, and are retried). */
function webhookIntegration(hook: WebhookHealth): Integration {
  const counts = `${hook.queued} queued, ${hook.delivered} delivered, ${hook.dropped} dropped`;
  const last =
    hook.lastDeliveredAt === null
      ? ""
      : `; last delivered at ${new Date(hook.lastDeliveredAt).toISOString()}`;
  return hook.state === "failing"
    ? {
        status: "degraded",
        detail: `${hook.host}: not taking events (${hook.lastError ?? "failing"}), retried with backoff; ${counts}${last}`,
      }
    : { status: "healthy", detail: `${hook.host}: ${hook.state}; ${counts}${last}` };
}

export function integrations(deps: HttpDeps, now: number): IntegrationsReport {
  const mqtt = deps.mqttStatus();
  const where = `${mqtt.broker}${mqtt.embedded ? " (embedded broker)" : ""}`;
  const mqttIntegration: Integration = mqtt.connected
    ? { status: "healthy", detail: `connected to ${where}` }
    : {
        status: "unhealthy",
        detail: `not connected to ${where}${mqtt.lastError ? `: ${mqtt.lastError}` : ""}`,
      };
  const report: Record<string, Integration> = { mqtt: mqttIntegration };
  const cluster = deps.clusterStatus?.();
  const held = cluster === undefined ? null : new Set(cluster.instances);

  const pdus: Integration[] = [];
  for (const status of deps.store.list()) {
    if (held !== null && !held.has(status.id)) continue;
    const pdu = pduIntegration(status, limitOf(deps, status.id), now, deps.loginProblem?.(status.id) ?? null);
    pdus.push(pdu);
    report[`pdu:${status.id}`] = pdu;
  }

  const api = deps.config.Api;
  const outage = api.Enabled ? (deps.apiOutage?.() ?? null) : null;
  if (!api.Enabled) report.api = { status: "healthy", detail: "disabled" };
  else if (outage !== null) report.api = { status: "unhealthy", detail: outage };
  else {
    const control = api.ApiKey === "" ? "disabled (no API key)" : "enabled";
    report.api = { status: "healthy", detail: `enabled on ${api.Bind}:${api.Port}; control ${control}` };
  }

  const ha = deps.homeAssistantStatus();
  if (!ha.enabled) report.homeassistant = { status: "healthy", detail: "disabled" };
  else if (ha.lastDiscoveryUtc === null) {
    report.homeassistant = {
      status: "degraded",
      detail: mqtt.connected ? "discovery not published yet" : "discovery waits for the MQTT connection",
    };
  } else {
    const at = new Date(ha.lastDiscoveryUtc).toISOString();
    report.homeassistant = {
      status: "healthy",
      detail: `discovery published under ${ha.discoveryTopic} at ${at}`,
    };
  }

  if (cluster !== undefined) report.cluster = clusterIntegration(cluster);
  for (const hook of deps.webhooks?.() ?? []) report[`webhook:${hook.receiver}`] = webhookIntegration(hook);

  const all = Object.values(report);
  const status: IntegrationState =
    mqttIntegration.status === "unhealthy" ||
    report.cluster?.status === "unhealthy" ||
    (pdus.length > 0 && pdus.every((p) => p.status === "unhealthy"))
      ? "unhealthy"
      : all.every((i) => i.status === "healthy")
        ? "healthy"
        : "degraded";
  return { status, integrations: report };
}
