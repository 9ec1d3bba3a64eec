/**
 * The service's one event bus, owned by the composition root (src/app.ts): what happened, told to
 * every part that cares, so that no part reaches into another to learn it. The events and who emits
 * and listens to each are listed in docs/architecture.md ("The event bus").
 *
 * - Typed: `bus.on("snapshot", (e) => …)` knows `e` is a {@link SnapshotEvent}; `on` returns the
 *   function that removes the listener.
 * - Owned: a part registers its listeners with {@link EventBus.listen}, naming itself as their
 *   owner, and {@link EventBus.release} removes everything an owner registered. The lifecycle
 *   (src/lifecycle.ts) releases a part's listeners when it stops the part (and when its start
 *   fails), so a stopped part hears no event and no part keeps its own way of unsubscribing.
 * - Synchronous: `emit` calls the event's listeners in registration order before it returns, so a
 *   part that emits knows every listener has seen the event (the store's snapshot is the one they
 *   read). A listener added during an emit hears the next event; one removed during it is not called.
 * - Isolated: a listener that throws is logged (once a minute per listener at most, with the count
 *   of the failures in between) and never stops the other listeners or the emitter, so a failing
 *   listener cannot take down polling or MQTT.
 */
import type { LiveChanges } from "./config/kubernetes/diff.js";
import type { Config } from "./config/schema.js";
import type { Logger } from "./log.js";
import type { AlarmChange, LoadReport, Snapshot } from "./pdu/model.js";
import type { TrapEvent } from "./pdu/trap-events.js";

/** A new snapshot of an instance: from a poll, or a latch or overrides view that changed what it shows. */
export interface SnapshotEvent {
  /** Shared with {@link PollFailedEvent}, so that a listener of both handles them as one union. */
  readonly kind: "snapshot";
  readonly instanceId: string;
  /** The snapshot every consumer reads: latches applied, then the instance's overrides. */
  readonly snapshot: Snapshot;
  /** True when a poll produced it; false when only a latch or the view changed. */
  readonly fromPoll: boolean;
  /**
   * True when a poll produced it and its content is that of the instance's previous event, which a
   * poll produced too (`sameContent` in src/pdu/model.ts: the PDU answered exactly as before and no
   * latch or view is in the way): only the timestamp is new, so a listener that derives output
   * from the content alone may skip it.
   */
  readonly unchanged: boolean;
  /** Loads against ratings and active alarms of the snapshot (the store's status's `load`). */
  readonly load: LoadReport;
  /** Alarms this snapshot raised, changed or cleared (empty for most; also told as an `alarms` event). */
  readonly alarmChanges: readonly AlarmChange[];
}

/** A poll of an instance failed (its last good snapshot stays). */
export interface PollFailedEvent {
  readonly kind: "failure";
  readonly instanceId: string;
  /** Readable message of the failure. */
  readonly error: string;
  /** True when the instance was online (its previous poll succeeded). */
  readonly wasOnline: boolean;
}

/** A poll ended (succeeded or failed; not aborted by a stop), before its outcome is recorded. */
export interface PollDoneEvent {
  readonly instanceId: string;
  readonly ms: number;
}

/** Something wrote to an instance's PDU: poll it after `delayMs`, so its report confirms the write. */
export interface PollSoonEvent {
  readonly instanceId: string;
  readonly delayMs: number | undefined;
}

/**
 * An instance came online (its first successful poll, or the first after failures) or went
 * offline (the first failed poll after a success).
 */
export type InstanceStatusEvent =
  | { readonly instanceId: string; readonly online: true; readonly snapshot: Snapshot }
  | { readonly instanceId: string; readonly online: false; readonly error: string };

/**
 * Alarms a new snapshot of an instance raised, changed or cleared (src/pdu/load.ts), told right
 * before the `snapshot` event that carries them; or the alarms about several PDUs the assets part
 * raised, changed or cleared (src/assets/part.ts). Never empty.
 */
export interface AlarmsEvent {
  /**
   * The instance; for the alarms about several PDUs (src/assets/alarms.ts) the scope they are
   * listed under, `$assets` or `$feeds` (no instance id can be either).
   */
  readonly instanceId: string;
  readonly changes: readonly AlarmChange[];
}

/** An outlet, or a OneView group, that a command names (the control core's contract, src/control/types.ts). */
export type ControlTarget =
  | { readonly kind: "outlet"; readonly deviceId: string; readonly index: number }
  | { readonly kind: "group"; readonly groupKey: string };

/**
 * What a settings write names (docs/control.md, "Settings writes"): an outlet, a device, an entity
 * or a OneView group.
 */
export type SettingsTarget =
  | ControlTarget
  | { readonly kind: "device"; readonly deviceId: string }
  | { readonly kind: "entity"; readonly deviceId: string; readonly entityKey: string };

/** A person signed in to the web console (OpenID Connect): the ID token's subject and a display name. */
export interface ConsoleUser {
  readonly sub: string;
  readonly name: string;
}

/**
 * Who asked: for the audit log. `rest` is a machine with the API key (`key`: the key matched),
 * `console` a signed-in user of the web console, `mqtt` a command topic.
 */
export type ControlSource =
  | { readonly surface: "rest"; readonly client: string; readonly key?: boolean }
  | { readonly surface: "console"; readonly client: string; readonly user: ConsoleUser }
  | { readonly surface: "mqtt"; readonly topic: string };

/**
 * One control attempt, from either surface, as audited (src/control/audit.ts): every command and
 * settings write, refused or not, exactly once.
 */
export interface ControlEvent {
  readonly source: ControlSource;
  readonly instanceId: string | null;
  /** A control target, or (for a settings write) also a device or an entity. */
  readonly target: SettingsTarget | null;
  /** The command's name, `set` for a settings write; null when the request named none this service knows. */
  readonly action: string | null;
  /** HTTP-style status of the outcome (200 done; 4xx refused; 5xx failed). */
  readonly status: number;
  readonly detail?: string;
  /** The outcome's specific problem (e.g. `outcome-unknown`), when it has one. */
  readonly problem?: string;
  /** The asset whose command this write is part of (asset control, sequences), when it is one. */
  readonly asset?: string;
  /**
   * True when the control core decided the outcome; false when the surface refused the request
   * before it (a wrong key, a bad payload, control off for the instance, no core in this process).
   */
  readonly fromCore: boolean;
}

/** The login check's verdict on an instance changed: `problem` appeared (the PDU refused the login) or went (null). */
export interface CredentialsEvent {
  readonly instanceId: string;
  readonly problem: string | null;
}

export interface MqttConnectedEvent {
  /** Broker URL without credentials. */
  readonly broker: string;
}

export interface MqttLostEvent {
  readonly broker: string;
  /** True when the bridge itself closed the connection (stopping); false when it was lost. */
  readonly stopping: boolean;
}

/** A live configuration change was applied (src/config/kubernetes/diff.ts decides what is live). */
export interface ConfigAppliedEvent {
  /** The configuration in force from now on. */
  readonly config: Config;
  readonly live: LiveChanges;
}

/** Instances this process took over or gave up (src/ownership.ts). */
export interface OwnershipChangedEvent {
  readonly gained: readonly string[];
  readonly lost: readonly string[];
  /**
   * Among several replicas: the bucket that changed hands here (docs/cluster.md); `handover`
   * when it was given up cleanly (to a better holder, or on stop), false when it was lost.
   */
  readonly bucket?: {
    readonly index: number;
    readonly held: boolean;
    readonly handover: boolean;
    /**
     * On a handover: work the release of the bucket's lease waits for (briefly), so that what this
     * replica ends for the bucket has ended before the next holder takes it.
     */
    readonly holdRelease?: (work: Promise<unknown>) => void;
  };
}

/** Among several replicas: the members alive changed (a replica joined, left or stopped renewing). */
export interface MembersChangedEvent {
  /** The members' names, this replica's among them. */
  readonly members: readonly string[];
}

/**
 * Assets whose state moved, or a new feed-loss projection (src/assets/part.ts). What the surfaces
 * show of them is read from the assets part's view (src/assets/view.ts); the alarms they raise,
 * change or clear are told as `alarms` events under `$assets` and `$feeds`.
 */
export interface AssetsEvent {
  /** The assets whose state moved (a figure included), in id order. */
  readonly assets: readonly string[];
  /** True when the feed-loss projection was made again. */
  readonly feeds: boolean;
  /** True after a live change of the configuration built them again: any asset may have changed or gone. */
  readonly reconfigured: boolean;
}

/**
 * A power sequence moved (docs/assets.md "Sequences"): a wave begun, or the run ended. Told by the
 * replica that runs the sequence (src/control/sequences.ts).
 */
export interface SequenceEvent {
  readonly id: string;
  readonly action: "on" | "off";
  readonly state: "running" | "stopping" | "done" | "stopped";
  /** The wave begun (from 0); the number of waves once the run ended. */
  readonly wave: number;
  readonly waves: number;
  /** Assets executed, and not executed, in the waves done. */
  readonly executed: number;
  readonly failed: number;
}

/**
 * A trap from an instance's PDU was accepted (src/traps/: its source is the instance's Host, its
 * community or user one the receiver takes) and its profile's trap table made an event of it.
 * Told only by the replica that polls the instance.
 */
export interface TrapBusEvent {
  readonly instanceId: string;
  /** When it arrived (epoch ms). */
  readonly at: number;
  readonly event: TrapEvent;
}

/** Every event of the bus by name. */
export interface BusEvents {
  snapshot: SnapshotEvent;
  pollFailed: PollFailedEvent;
  pollDone: PollDoneEvent;
  pollSoon: PollSoonEvent;
  instanceStatus: InstanceStatusEvent;
  alarms: AlarmsEvent;
  assets: AssetsEvent;
  control: ControlEvent;
  credentials: CredentialsEvent;
  mqttConnected: MqttConnectedEvent;
  mqttLost: MqttLostEvent;
  configApplied: ConfigAppliedEvent;
  ownershipChanged: OwnershipChangedEvent;
  membersChanged: MembersChangedEvent;
  sequence: SequenceEvent;
  trap: TrapBusEvent;
}

export type BusEventName = keyof BusEvents;

/** Every event's name (docs/architecture.md lists each with who emits and who listens). */
export const BUS_EVENT_NAMES = [
  "snapshot",
  "pollFailed",
  "pollDone",
  "pollSoon",
  "instanceStatus",
  "alarms",
  "assets",
  "control",
  "credentials",
  "mqttConnected",
  "mqttLost",
  "configApplied",
  "ownershipChanged",
  "membersChanged",
  "sequence",
  "trap",
] as const satisfies readonly BusEventName[];
// An event missing from the list above fails to compile here.
const _everyEventListed: Record<Exclude<BusEventName, (typeof BUS_EVENT_NAMES)[number]>, never> = {};
void _everyEventListed;
export type BusListener<K extends BusEventName> = (event: BusEvents[K]) => void;
/** Listeners of several events at once ({@link EventBus.listen}). */
export type BusListeners = { readonly [K in BusEventName]?: BusListener<K> };

/** At most one line per listener per this period about its failures (ms). */
export const LISTENER_FAILURE_LOG_MS = 60_000;

interface Entry {
  readonly listener: (event: never) => void;
  active: boolean;
  /** Failures since the last line about them. */
  failures: number;
  loggedAt: number;
}

export interface EventBusOptions {
  /** Where a failing listener is reported; default: a process warning. */
  readonly logger?: Logger;
  readonly now?: () => number;
}

export class EventBus {
  /** Per event, its listeners in registration order; replaced, never changed, while emits run. */
  readonly #entries = new Map<BusEventName, readonly Entry[]>();
  /** Per owner, the removal of each listener it registered with {@link listen}. */
  readonly #owned = new Map<object, (() => void)[]>();
  readonly #logger: Logger | undefined;
  readonly #now: () => number;

  constructor(options: EventBusOptions = {}) {
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
  }

  /** Calls `listener` with every `name` event from now on, until the returned function is called. */
  on<K extends BusEventName>(name: K, listener: BusListener<K>): () => void {
    const entry: Entry = { listener, active: true, failures: 0, loggedAt: -Infinity };
    this.#entries.set(name, [...(this.#entries.get(name) ?? []), entry]);
    return () => {
      if (!entry.active) return;
      entry.active = false;
      const left = (this.#entries.get(name) ?? []).filter((e) => e !== entry);
      if (left.length > 0) this.#entries.set(name, left);
      else this.#entries.delete(name);
    };
  }

  /**
   * {@link on} for each of `listeners` (in their order), on behalf of `owner` (a part, or an object
   * a part holds): they hear events until {@link release} of the owner.
   */
  listen(owner: object, listeners: BusListeners): void {
    const offs = this.#owned.get(owner) ?? [];
    for (const name of Object.keys(listeners) as BusEventName[]) {
      const listener = listeners[name] as BusListener<BusEventName> | undefined;
      if (listener !== undefined) offs.push(this.on(name, listener));
    }
    if (offs.length > 0) this.#owned.set(owner, offs);
  }

  /** Removes every listener `owner` registered with {@link listen}, at once (also during an emit). */
  release(owner: object): void {
    const offs = this.#owned.get(owner);
    if (offs === undefined) return;
    this.#owned.delete(owner);
    for (const off of offs) off();
  }

  /** Tells every listener of `name`, in registration order. Never throws. */
  emit<K extends BusEventName>(name: K, event: BusEvents[K]): void {
    const entries = this.#entries.get(name);
    if (entries === undefined) return;
    for (const entry of entries) {
      if (!entry.active) continue;
      try {
        (entry.listener as BusListener<K>)(event);
      } catch (error) {
        this.#failed(name, entry, error);
      }
    }
  }

  /** Listeners of `name` now. */
  listenerCount(name: BusEventName): number {
    return this.#entries.get(name)?.length ?? 0;
  }

  #failed(name: BusEventName, entry: Entry, error: unknown): void {
    entry.failures++;
    const now = this.#now();
    if (now - entry.loggedAt < LISTENER_FAILURE_LOG_MS) return;
    const failures = entry.failures;
    entry.loggedAt = now;
    entry.failures = 0;
    const message = `a listener of the bus's ${name} event failed; the other listeners and its emitter went on`;
    try {
      if (this.#logger !== undefined) this.#logger.error({ event: name, err: error, failures }, message);
      else process.emitWarning(`${message}: ${error instanceof Error ? error.message : String(error)}`);
    } catch {
      // Reporting must never take the emitter down either.
    }
  }
}
