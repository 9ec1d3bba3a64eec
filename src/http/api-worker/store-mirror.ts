/**
 * The seam between the main thread and the API worker (thread.ts, why it exists: host.ts): what the main thread sends of
 * the snapshot store, and what the worker reports back. The store stays in the main thread; the
 * worker keeps a mirror of what the fast read endpoints show (health entries and readings).
 */
import type { Snapshot } from "../../pdu/model.js";
import { readingsJson } from "../../pdu/readings.js";
import type { HttpLimits, TlsPair } from "../listener.js";
import type { HttpDeps } from "../types.js";

/** The private header that carries the client's HTTP version and address from the worker to fastify. */
export const PEER_HEADER = "x-pdu-bridge-peer";

/** One instance's status as the mirror holds it. */
export interface MirrorStatus {
  readonly id: string;
  readonly lastPollUtc: number | null;
  readonly lastError: string | null;
  readonly consecutiveFailures: number;
  /**
   * "new": a new snapshot, whose readings the worker asks for when a request needs them (so the
   * main thread serialises readings only for snapshots someone reads); "same": the snapshot did not
   * change since the last message; "none": no snapshot yet.
   */
  readonly snapshot: "new" | "same" | "none";
}

export type ToWorker =
  | { readonly kind: "statuses"; readonly mqttConnected: boolean; readonly statuses: MirrorStatus[] }
  /**
   * The readings of these instances' current snapshots, as asked; `failed`: instances whose readings
   * could not be serialised (the worker passes their requests to fastify, which answers 500).
   */
  | { readonly kind: "readings"; readonly readings: [id: string, json: string][]; readonly failed: string[] }
  /** The heartbeat: the worker answers with its own `beat` (thread.ts). */
  | { readonly kind: "beat" }
  | { readonly kind: "close" };

export type FromWorker =
  | { readonly kind: "listening"; readonly port: number }
  | { readonly kind: "listen-failed"; readonly code: string | undefined; readonly message: string }
  /** Requests the worker answered itself since its last report, by path. */
  | { readonly kind: "served"; readonly counts: [path: string, statusCode: number, count: number][] }
  | {
      readonly kind: "log";
      readonly level: "warn" | "error";
      readonly msg: string;
      readonly err?: string;
      /** More fields of the line (the connection gate's client and rule). */
      readonly fields?: Readonly<Record<string, unknown>>;
    }
  /** Asks for the readings of these instances (their snapshots were "new"). */
  | { readonly kind: "readings"; readonly ids: string[] }
  /** The answer to the main thread's heartbeat. */
  | { readonly kind: "beat" }
  | { readonly kind: "closed" };

export interface WorkerSetup {
  readonly bind: string;
  readonly port: number;
  readonly limits: HttpLimits;
  readonly startedAt: number;
  /** The unix socket of the main thread's fastify app, in a directory only this user may enter. */
  readonly upstream: string;
  /** Every instance's status, in configuration order. */
  readonly statuses: MirrorStatus[];
  readonly mqttConnected: boolean;
  /** HTTPS on the listener (`Api.Tls`), or null. */
  readonly tls: TlsPair | null;
  /** Answer the plain reads from the mirror; false under `Api.Oidc.ProtectReads` (fastify checks every read). */
  readonly fastReads: boolean;
  /** Answer `?instance=` from the mirror; false among several replicas (the main thread asks the holder). */
  readonly instanceReads: boolean;
}

/**
 * Feeds the worker's mirror: the statuses that changed, batched once per event-loop turn, and the
 * readings of a snapshot when the worker asks for them (serialised once per snapshot, the same
 * cache the REST routes use). The MQTT state goes with every batch; the bus's `mqttConnected` and
 * `mqttLost` send a batch of their own.
 */
export class MirrorFeed {
  readonly #deps: HttpDeps;
  readonly #post: (message: ToWorker) => void;
  readonly #changed = new Set<string>();
  readonly #sent = new Map<string, Snapshot | null>();
  /** The last snapshot per instance whose readings failed (logged once); instances are configured: bounded. */
  readonly #failed = new Map<string, Snapshot>();
  #scheduled = false;
  #mqttConnected: boolean;

  constructor(deps: HttpDeps, post: (message: ToWorker) => void) {
    this.#deps = deps;
    this.#post = post;
    this.#mqttConnected = deps.mqttStatus().connected;
    const changed = (event: { readonly instanceId: string }): void => {
      this.#changed.add(event.instanceId);
      this.#schedule();
    };
    deps.bus.listen(this, {
      snapshot: changed,
      pollFailed: changed,
      mqttConnected: () => this.#mqtt(true),
      mqttLost: () => this.#mqtt(false),
    });
  }

  /**
   * What a worker starts with: every status, and the MQTT state. A worker started again after one
   * died holds no readings yet: every snapshot is "new" to it.
   */
  initial(): { statuses: MirrorStatus[]; mqttConnected: boolean } {
    this.#sent.clear();
    return {
      statuses: this.#deps.store.list().map((s) => this.#status(s.id)!),
      mqttConnected: this.#mqttConnected,
    };
  }

  stop(): void {
    this.#deps.bus.release(this);
  }

  #mqtt(connected: boolean): void {
    this.#mqttConnected = connected;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    const statuses: MirrorStatus[] = [];
    for (const id of this.#changed) {
      const status = this.#status(id);
      if (status !== undefined) statuses.push(status);
    }
    this.#changed.clear();
    const message: ToWorker = { kind: "statuses", mqttConnected: this.#mqttConnected, statuses };
    this.#post(message);
  }

  /**
   * The readings of the instances' current snapshots (the worker's answer to "readings"). A snapshot
   * whose readings cannot be serialised is listed as failed (and logged once), never thrown.
   */
  readings(ids: readonly string[]): ToWorker {
    const readings: [string, string][] = [];
    const failed: string[] = [];
    for (const id of ids) {
      const snapshot = this.#deps.store.get(id)?.snapshot ?? null;
      try {
        readings.push([id, snapshot === null ? "" : readingsJson(snapshot)]);
      } catch (error) {
        failed.push(id);
        if (snapshot !== null && this.#failed.get(id) !== snapshot) {
          this.#failed.set(id, snapshot);
          this.#deps.logger.error(
            { err: error, instance: id },
            "the readings of this snapshot cannot be serialised; the REST API answers 500 for them",
          );
        }
      }
    }
    return { kind: "readings", readings, failed };
  }

  #status(id: string): MirrorStatus | undefined {
    const s = this.#deps.store.get(id);
    if (s === undefined) return undefined;
    let snapshot: MirrorStatus["snapshot"] = "same";
    if (!this.#sent.has(id) || this.#sent.get(id) !== s.snapshot) {
      this.#sent.set(id, s.snapshot);
      snapshot = s.snapshot === null ? "none" : "new";
    }
    return {
      id,
      lastPollUtc: s.lastPollUtc,
      lastError: s.lastError,
      consecutiveFailures: s.consecutiveFailures,
      snapshot,
    };
  }
}
