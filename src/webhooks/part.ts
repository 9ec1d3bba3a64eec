/**
 * The `webhooks` part (docs/events.md, Webhooks): hears the bus's alarm, control, availability and
 * sequence events, turns each into a signed POST to every receiver that takes its kind, in order
 * per receiver, and keeps what is not yet delivered where a restart or the next holder finds it.
 *
 * Scopes: one process keeps everything in scope 0 (`State.Dir` when set, else memory). Among
 * replicas each bucket is a scope, held by the bucket's holder: only it sends the events of the
 * bucket's instances (the fleet-wide alarms, under `$assets` and `$feeds`, are bucket 0's), and it
 * writes the bucket's state to a record in the coordination engine before it sends an event; a
 * new holder reads the record before it tells anything of the bucket, sends what is still owed
 * under the same ids, and keeps back what was already told (./state.ts). A sequence's progress is
 * sent by the replica that runs the sequence, from memory ({@link LOCAL_SCOPE}).
 */
import type {
  AlarmsEvent,
  BusEvents,
  ControlEvent,
  EventBus,
  OwnershipChangedEvent,
  SnapshotEvent,
} from "../bus.js";
import type { Config } from "../config/schema.js";
import type { Part } from "../lifecycle.js";
import { FoldedLog } from "../log-limit.js";
import type { Logger } from "../log.js";
import type { ScopeBackend } from "./backends.js";
import {
  alarmEvent,
  alarmFields,
  alarmGoneEvent,
  availabilityEvent,
  controlEvent,
  sequenceEvent,
  type WebhookEvent,
  type WebhookKind,
} from "./events.js";
import { Receiver, type QueuedEvent, type ReceiverStatus } from "./receiver.js";
import { SAVED_FORMAT, SAVED_VERSION, type Saved, type ToldAlarm } from "./state.js";

/** The scope of what only this process sends and keeps in memory (a sequence run among replicas). */
export const LOCAL_SCOPE = -1;
/** Events heard for a scope still being read, kept at most until it is read. */
const MAX_WAITING = 10_000;
/** Wait before writing a scope again after a failed write (ms). */
const SAVE_RETRY_MS = 1000;

interface Pending {
  readonly queued: QueuedEvent;
  readonly owed: Set<string>;
  /** Written where the scope is kept (or nothing keeps it): it may be sent. */
  kept: boolean;
}

class Scope {
  readonly events = new Map<string, Pending>();
  readonly alarms = new Map<string, ToldAlarm>();
  readonly online = new Map<string, boolean>();
  /** Instances whose first snapshot here tells the alarms told before and gone since as cleared. */
  readonly reconcile = new Set<string>();
  /** Work heard while the scope is read, done once it is. */
  waiting: (() => void)[] | null = [];
  saving: Promise<void> | null = null;
  dirty = false;
  constructor(readonly index: number) {}
}

export interface WebhooksOptions {
  readonly config: Config;
  readonly bus: EventBus;
  readonly logger: Logger;
  /** null: memory only. */
  readonly backend: ScopeBackend | null;
  /** Among replicas: the bucket of an instance, and whether this replica holds a bucket; else null. */
  readonly cluster: { bucketOf(instance: string): number; holdsBucket(bucket: number): boolean } | null;
}

export interface WebhooksStatus {
  readonly receivers: readonly (ReceiverStatus & { readonly kinds: readonly WebhookKind[] })[];
  readonly unkept: number;
}

export class WebhooksPart implements Part {
  readonly name = "webhooks";
  readonly #options: WebhooksOptions;
  readonly #receivers: Receiver[];
  readonly #scopes = new Map<number, Scope>();
  readonly #log: FoldedLog;
  #unkept = 0;
  #stopped = false;

  constructor(options: WebhooksOptions) {
    this.#options = options;
    this.#log = new FoldedLog(options.logger, { windowMs: 60_000 });
    const secrets = options.config.webhookSecrets ?? [];
    this.#receivers = options.config.Webhooks.map(
      (hook, i) =>
        new Receiver({
          label: hook.Name ?? String(i),
          url: hook.Url,
          secret: secrets[i] ?? "",
          kinds: new Set(hook.Events),
          timeoutMs: hook.Timeout * 1000,
          maxDelayMs: hook.RetryMaxDelay * 1000,
          maxQueue: hook.MaxQueue,
          caFile: hook.CaFile,
          logger: options.logger,
          sendable: (q) => this.#sendable(q),
          done: (q, outcome, label) => this.#done(q, outcome, label),
        }),
    );
  }

  get enabled(): boolean {
    return this.#receivers.length > 0;
  }

  async start(): Promise<void> {
    if (!this.enabled) return;
    this.#options.bus.listen(this, {
      alarms: (e) => this.#alarms(e),
      snapshot: (e) => this.#snapshot(e),
      instanceStatus: (e) => this.#availability(e),
      control: (e) => this.#control(e),
      sequence: (e) => this.#sequence(e),
      ownershipChanged: (e) => this.#ownership(e),
    });
    this.#scopes.set(LOCAL_SCOPE, this.#readyScope(LOCAL_SCOPE));
    // One process: scope 0, read before anything is polled (a file it cannot read refuses the start).
    if (this.#options.cluster === null) await this.#take(0, true);
    for (const [i, receiver] of this.#receivers.entries()) await receiver.start(i);
  }

  async stop(): Promise<void> {
    if (!this.enabled) return;
    this.#stopped = true;
    this.#options.bus.release(this);
    await Promise.allSettled(this.#receivers.map((r) => r.stop()));
    await Promise.allSettled([...this.#scopes.values()].map((s) => this.#flush(s)));
    this.#log.close();
  }

  status(): WebhooksStatus {
    return {
      receivers: this.#receivers.map((r) => ({ ...r.status(), kinds: [...r.kinds] })),
      unkept: this.#unkept,
    };
  }

  #readyScope(index: number): Scope {
    const scope = new Scope(index);
    scope.waiting = null;
    return scope;
  }

  /** The scope of an instance (null: fleet-wide, bucket 0), or null when another replica sends it. */
  #scopeOf(instance: string | null): Scope | null {
    const cluster = this.#options.cluster;
    const index =
      cluster === null || instance === null || instance.startsWith("$") ? 0 : cluster.bucketOf(instance);
    if (cluster !== null && !cluster.holdsBucket(index)) return null;
    return this.#scopes.get(index) ?? null;
  }

  /** Runs `work` in the instance's scope now, or once the scope is read; not at all elsewhere. */
  #in(instance: string | null, work: (scope: Scope) => void): void {
    const scope = this.#scopeOf(instance);
    if (scope === null) return;
    if (scope.waiting === null) return work(scope);
    if (scope.waiting.length < MAX_WAITING) scope.waiting.push(() => work(scope));
    else this.#unkept++;
  }

  #alarms(event: AlarmsEvent): void {
    const instance = event.instanceId;
    this.#in(instance, (scope) => {
      for (const change of event.changes) {
        const { alarm } = change;
        if (alarm.hidden === true) continue;
        const key = `${instance}\u0000${alarm.id}`;
        if (change.change === "raised" && scope.alarms.has(key)) continue;
        if (change.change === "cleared") scope.alarms.delete(key);
        else
          scope.alarms.set(key, {
            instance,
            id: alarm.id,
            since: alarm.since,
            fields: alarmFields(alarm) as ToldAlarm["fields"],
          });
        this.#add(scope, alarmEvent(instance, change));
      }
    });
  }

  /** The first snapshot of an instance after its scope was read: alarms told and gone since, cleared. */
  #snapshot(event: SnapshotEvent): void {
    if (!event.fromPoll) return;
    const instance = event.instanceId;
    this.#in(instance, (scope) => {
      if (!scope.reconcile.delete(instance)) return;
      const active = new Set(event.load.alarms.map((a) => a.id));
      for (const [key, told] of scope.alarms) {
        if (told.instance !== instance || active.has(told.id)) continue;
        scope.alarms.delete(key);
        this.#add(scope, alarmGoneEvent(instance, told, event.snapshot.timestamp));
      }
    });
  }

  #availability(event: BusEvents["instanceStatus"]): void {
    const instance = event.instanceId;
    this.#in(instance, (scope) => {
      if (scope.online.get(instance) === event.online) return;
      scope.online.set(instance, event.online);
      const error = event.online ? null : event.error;
      this.#add(scope, availabilityEvent(instance, event.online, Date.now(), error));
    });
  }

  #control(event: ControlEvent): void {
    const instance = event.instanceId;
    if (!event.fromCore || instance === null) return;
    this.#in(instance, (scope) =>
      this.#add(scope, controlEvent({ ...event, instanceId: instance }, Date.now())),
    );
  }

  #sequence(event: BusEvents["sequence"]): void {
    const scope = this.#options.cluster === null ? this.#scopes.get(0) : this.#scopes.get(LOCAL_SCOPE);
    if (scope === undefined) return;
    const run = () => this.#add(scope, sequenceEvent(event, Date.now()));
    if (scope.waiting === null) run();
    else if (scope.waiting.length < MAX_WAITING) scope.waiting.push(run);
  }

  /** Queues an event for every receiver that takes its kind, and writes the scope. */
  #add(scope: Scope, event: WebhookEvent): void {
    if (this.#stopped || scope.events.has(event.id)) return;
    const takers = this.#receivers.filter((r) => r.kinds.has(event.kind));
    if (takers.length === 0) return;
    const queued: QueuedEvent = { event, scope: scope.index };
    const keptNow = this.#options.backend === null || scope.index === LOCAL_SCOPE;
    scope.events.set(event.id, { queued, owed: new Set(takers.map((r) => r.label)), kept: keptNow });
    for (const receiver of takers) receiver.enqueue(queued);
    this.#write(scope);
  }

  #sendable(queued: QueuedEvent): boolean {
    const scope = this.#scopes.get(queued.scope);
    if (scope === undefined) return false;
    const cluster = this.#options.cluster;
    if (cluster !== null && scope.index !== LOCAL_SCOPE && !cluster.holdsBucket(scope.index)) return false;
    return scope.events.get(queued.event.id)?.kept === true;
  }

  #done(queued: QueuedEvent, outcome: "delivered" | "dropped", receiver: string): void {
    if (outcome === "dropped")
      this.#log.warn(
        `dropped ${receiver}`,
        { receiver },
        `webhook receiver ${receiver}'s queue is full: its oldest undelivered event was dropped`,
      );
    const scope = this.#scopes.get(queued.scope);
    const pending = scope?.events.get(queued.event.id);
    if (scope === undefined || pending === undefined) return;
    pending.owed.delete(receiver);
    if (pending.owed.size === 0) scope.events.delete(queued.event.id);
    this.#write(scope);
  }

  #ownership(event: OwnershipChangedEvent): void {
    const bucket = event.bucket;
    if (bucket === undefined || this.#options.cluster === null || this.#stopped) return;
    if (bucket.held) {
      void this.#take(bucket.index, false);
      return;
    }
    const scope = this.#scopes.get(bucket.index);
    if (scope === undefined) return;
    this.#scopes.delete(bucket.index);
    for (const receiver of this.#receivers) receiver.removeScope(bucket.index);
    // A handover: what is owed is written before the lease goes, so the next holder sends it.
    if (bucket.handover && bucket.holdRelease !== undefined) bucket.holdRelease(this.#flush(scope));
  }

  /** Reads a scope (a bucket taken, or scope 0 at start) and queues what it still owes. */
  async #take(index: number, refuseUnreadable: boolean): Promise<void> {
    const scope = new Scope(index);
    this.#scopes.set(index, scope);
    let saved: Saved | null = null;
    try {
      saved = (await this.#options.backend?.load(index)) ?? null;
    } catch (error) {
      if (refuseUnreadable) throw error;
      this.#options.logger.error(
        { bucket: index, err: error instanceof Error ? error.message : String(error) },
        "the webhooks record of a bucket taken over cannot be read: its undelivered events are lost",
      );
    }
    if (this.#scopes.get(index) !== scope) return;
    if (saved !== null) this.#restore(scope, saved);
    const waiting = scope.waiting ?? [];
    scope.waiting = null;
    for (const work of waiting) work();
    for (const receiver of this.#receivers) receiver.poke();
  }

  #restore(scope: Scope, saved: Saved): void {
    for (const told of saved.alarms) {
      scope.alarms.set(`${told.instance}\u0000${told.id}`, told);
      scope.reconcile.add(told.instance);
    }
    for (const [instance, online] of Object.entries(saved.online)) scope.online.set(instance, online);
    for (const e of saved.events) {
      const takers = this.#receivers.filter((r) => e.pending.includes(r.label) && r.kinds.has(e.kind));
      if (takers.length === 0) continue;
      const queued: QueuedEvent = {
        event: { id: e.id, kind: e.kind, instance: e.instance, body: e.body },
        scope: scope.index,
      };
      scope.events.set(e.id, { queued, owed: new Set(takers.map((r) => r.label)), kept: true });
      for (const receiver of takers) receiver.enqueue(queued);
    }
  }

  #saved(scope: Scope): Saved {
    const events = [...scope.events.values()].map((p) => ({ ...p.queued.event, pending: [...p.owed] }));
    return {
      format: SAVED_FORMAT,
      v: SAVED_VERSION,
      events,
      alarms: [...scope.alarms.values()],
      online: Object.fromEntries(scope.online),
    };
  }

  /** Writes the scope soon (one write at a time; changes meanwhile make one more). */
  #write(scope: Scope): void {
    if (this.#options.backend === null || scope.index === LOCAL_SCOPE) return;
    scope.dirty = true;
    scope.saving ??= this.#saveLoop(scope).finally(() => (scope.saving = null));
  }

  async #saveLoop(scope: Scope): Promise<void> {
    const backend = this.#options.backend;
    if (backend === null) return;
    while (scope.dirty) {
      scope.dirty = false;
      const batch = [...scope.events.values()];
      try {
        this.#unkept += await backend.save(scope.index, this.#saved(scope));
        for (const p of batch) p.kept = true;
      } catch (error) {
        this.#log.warn(
          "save",
          { err: error instanceof Error ? error.message : String(error), store: backend.description },
          "the webhooks state could not be written; trying again",
        );
        // One process: delivery goes on (the file is written again later). Among replicas a
        // bucket whose record cannot be written may be another's already: nothing of it is sent.
        if (this.#options.cluster === null) for (const p of batch) p.kept = true;
        scope.dirty = true;
        await new Promise((resolve) => setTimeout(resolve, SAVE_RETRY_MS).unref());
        if (this.#stopped || this.#scopes.get(scope.index) !== scope) return;
      }
      for (const receiver of this.#receivers) receiver.poke();
    }
  }

  /** The scope's last write (on stop, or before a handover's release). */
  async #flush(scope: Scope): Promise<void> {
    await scope.saving;
    if (this.#options.backend === null || scope.index === LOCAL_SCOPE) return;
    scope.dirty = true;
    await this.#saveLoop(scope).catch(() => undefined);
  }
}
