/**
 * The web console among several replicas (docs/console.md, "Among several replicas"): what a
 * replica's console shows of the instances other replicas hold, and the events they made.
 *
 * - **One ask per other replica per round**, never one per instance: every {@link CONSOLE_ROUND_MS}
 *   the console asks each other replica (a signed request of the protocol between replicas,
 *   src/cluster/forward/console.ts) for the events it made after this replica's cursor; while a
 *   page is open here, also for the statuses and active alarms of the instances it holds, and for
 *   the snapshots of those open in a PDU view here. The requests grow with the replicas, not with
 *   the instances.
 * - **Never an old state as if current.** The status of an instance held elsewhere is its holder's
 *   latest, taken only from the replica this one sees holding it, and only while that replica
 *   answers; otherwise the status says who holds it (or that nobody does) and why its state is not
 *   here, with every value empty.
 * - **Events exactly once.** Each replica numbers the events it makes (the control outcomes its own
 *   core decided, the alarm changes of its own polls) and keeps the latest {@link OWN_EVENTS_KEPT};
 *   the others ask for those after the last number they took, per incarnation, so an event is
 *   taken once, from the replica that made it (the forwarding replica makes none for a request
 *   another carried out). More events between two asks than a replica keeps are counted and
 *   logged, never dropped unsaid.
 *
 * Everything another replica answers is checked (./replica-wire.ts) and kept only for configured
 * instances, so every map here is bounded by the configuration and the members.
 */
import type { Logger } from "../log.js";
import { OWN_EVENTS_KEPT, parseReplicaConsoleAnswer, type ReplicaConsoleAnswer } from "./replica-wire.js";
import type { SnapshotEventData, WireActiveAlarm, WireInstanceStatus, WireRecentEvent } from "./wire.js";

/** How often the other replicas are asked (ms). */
export const CONSOLE_ROUND_MS = 2000;
/** A state from another replica older than this is not shown (ms): three rounds and an ask's timeout. */
const FRESH_MS = 3 * CONSOLE_ROUND_MS + 5000;

/** What the console asks another replica for (src/cluster/forward/protocol.ts `ConsoleAsk`). */
export interface ReplicaAsk {
  readonly statuses: boolean;
  readonly snapshots: string[];
  readonly eventsAfter: number;
}

/** What the console needs of the cluster and the other replicas (src/cluster/forward/console.ts). */
export interface ReplicaPeers {
  readonly member: string;
  holds(instanceId: string): boolean;
  /** The member holding an instance as last seen (this replica's name when it holds it), or null. */
  holderOf(instanceId: string): string | null;
  /** The other members alive as last seen. */
  peers(): readonly string[];
  /** `<member>/<incarnation>` of a member alive as last seen, or null. */
  identityOf(member: string): string | null;
  ask(
    member: string,
    ask: ReplicaAsk,
  ): Promise<
    | { readonly ok: true; readonly identity: string; readonly text: string }
    | { readonly ok: false; readonly why: string }
  >;
}

/** What the console of this replica shows of the instances it holds (for the others' asks). */
export interface HeldConsole {
  statuses(): { status: WireInstanceStatus; alarms: readonly WireActiveAlarm[] }[];
  snapshot(instanceId: string): SnapshotEventData | null;
}

/** What a round brought: events of other replicas (oldest first) and instances whose snapshot changed. */
export interface ReplicaUpdate {
  readonly events: readonly WireRecentEvent[];
  readonly snapshots: readonly string[];
}

export interface ReplicaConsoleOptions {
  readonly logger: Logger;
  readonly now: () => number;
  /** Whether an id names a configured instance (the configuration in force). */
  readonly configured: (instanceId: string) => boolean;
  /** What the pages open here want now: statuses (any page), and the snapshots of PDU views. */
  readonly wants: () => { readonly statuses: boolean; readonly snapshots: readonly string[] };
  /** After each round. */
  readonly changed: (update: ReplicaUpdate) => void;
}

interface RemoteStatus {
  readonly member: string;
  readonly status: WireInstanceStatus;
  readonly alarms: readonly WireActiveAlarm[];
  readonly at: number;
}

interface RemoteSnapshot {
  readonly member: string;
  readonly data: SnapshotEventData;
  readonly text: string;
  readonly at: number;
}

const NOBODY =
  "no replica holds it now: it is changing hands, or its holder stopped renewing its lease and the others wait for it to run out";

export class ReplicaConsole {
  readonly peers: ReplicaPeers;
  readonly #options: ReplicaConsoleOptions;
  /** This replica's own events, oldest first, numbered. */
  readonly #own: { seq: number; event: WireRecentEvent }[] = [];
  #next = 0;
  readonly #remote = new Map<string, RemoteStatus>();
  readonly #snapshots = new Map<string, RemoteSnapshot>();
  /** Per member: the incarnation asked and the number of the last of its events taken. */
  readonly #cursors = new Map<string, { identity: string; cursor: number }>();
  /** Members whose last ask failed, and why. */
  readonly #failures = new Map<string, string>();
  #timer: NodeJS.Timeout | null = null;
  #round: Promise<void> | null = null;
  #again = false;
  #stopped = false;

  constructor(peers: ReplicaPeers, options: ReplicaConsoleOptions) {
    this.peers = peers;
    this.#options = options;
  }

  start(): void {
    if (this.#stopped || this.#timer !== null) return;
    this.#timer = setInterval(() => this.soon(), CONSOLE_ROUND_MS).unref();
    this.soon();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** A round now (or right after the one in flight): a page opened, the holders changed. */
  soon(): void {
    if (this.#stopped) return;
    if (this.#round !== null) {
      this.#again = true;
      return;
    }
    this.#round = this.#ask()
      .catch((error: unknown) =>
        this.#options.logger.error({ err: error }, "console: a round of asks failed"),
      )
      .finally(() => {
        this.#round = null;
        if (this.#again) {
          this.#again = false;
          this.soon();
        }
      });
  }

  /** Waits for the round in flight (tests, stop). */
  async settled(): Promise<void> {
    await this.#round;
  }

  /** One of this replica's own events: numbered and kept for the others; returned with its maker. */
  record<E extends WireRecentEvent>(event: E): E {
    const made = { ...event, by: this.peers.member };
    this.#own.push({ seq: this.#next++, event: made });
    if (this.#own.length > OWN_EVENTS_KEPT) this.#own.shift();
    return made;
  }

  /** This replica's answer to another's ask, as JSON (src/cluster/forward/route.ts sends it signed). */
  answer(ask: ReplicaAsk, held: HeldConsole): string {
    const body: ReplicaConsoleAnswer = {
      statuses: ask.statuses ? held.statuses() : null,
      snapshots: ask.snapshots.flatMap((id) => {
        const snapshot = this.peers.holds(id) ? held.snapshot(id) : null;
        return snapshot === null ? [] : [snapshot];
      }),
      events: {
        list: this.#own.filter((e) => e.seq > ask.eventsAfter),
        oldest: this.#own[0]?.seq ?? this.#next,
        next: this.#next,
      },
    };
    return JSON.stringify(body);
  }

  /**
   * The status of an instance this replica does not hold: its holder's latest while the holder
   * answers, else `blank` (every value empty) saying who holds it and why its state is not here.
   */
  statusOf(instanceId: string, blank: WireInstanceStatus): WireInstanceStatus {
    const holder = this.peers.holderOf(instanceId);
    if (holder === null) {
      return { ...blank, replica: { holder: null, here: false, state: "none", note: NOBODY } };
    }
    const entry = this.#remote.get(instanceId);
    if (entry !== undefined && this.#fresh(entry, instanceId)) {
      return { ...entry.status, replica: { holder, here: false, state: "holder", note: null } };
    }
    const note = this.#failures.get(holder) ?? `its state has not come from replica ${holder} yet`;
    return { ...blank, replica: { holder, here: false, state: "none", note } };
  }

  /** The active alarms of the instances other replicas hold, as their holders last told. */
  alarms(): WireActiveAlarm[] {
    const list: WireActiveAlarm[] = [];
    for (const [id, entry] of this.#remote) if (this.#fresh(entry, id)) list.push(...entry.alarms);
    return list;
  }

  /** The holder's latest snapshot of an instance open in a PDU view here, or null. */
  snapshotOf(instanceId: string): SnapshotEventData | null {
    const entry = this.#snapshots.get(instanceId);
    return entry !== undefined && this.#fresh(entry, instanceId) ? entry.data : null;
  }

  #fresh(entry: { readonly member: string; readonly at: number }, instanceId: string): boolean {
    return (
      entry.member === this.peers.holderOf(instanceId) &&
      !this.#failures.has(entry.member) &&
      this.#options.now() - entry.at <= FRESH_MS
    );
  }

  async #ask(): Promise<void> {
    const members = this.peers.peers();
    const alive = new Set(members);
    // Bounded by the members: what belonged to members gone is forgotten.
    for (const map of [this.#cursors, this.#failures] as Map<string, unknown>[])
      for (const member of [...map.keys()]) if (!alive.has(member)) map.delete(member);
    for (const [id, entry] of this.#remote) if (!alive.has(entry.member)) this.#remote.delete(id);
    const wants = this.#options.wants();
    const wanted = new Set(wants.snapshots);
    for (const id of [...this.#snapshots.keys()]) if (!wanted.has(id)) this.#snapshots.delete(id);
    const results = await Promise.all(members.map((m) => this.#askOne(m, wants.statuses, wants.snapshots)));
    if (this.#stopped) return;
    const events = results
      .flatMap((r) => r.events)
      .sort((a, b) => (a.atUtc < b.atUtc ? -1 : a.atUtc > b.atUtc ? 1 : 0));
    this.#options.changed({ events, snapshots: results.flatMap((r) => r.snapshots) });
  }

  /** Asks one member; what it brought (nothing when it failed, which is noted for the statuses). */
  async #askOne(
    member: string,
    statuses: boolean,
    snapshots: readonly string[],
  ): Promise<{ events: WireRecentEvent[]; snapshots: string[] }> {
    const none = { events: [], snapshots: [] };
    const identity = this.peers.identityOf(member);
    if (identity === null) return none;
    const known = this.#cursors.get(member);
    const cursor = known?.identity === identity ? known.cursor : -1;
    const asked = snapshots.filter((id) => this.peers.holderOf(id) === member);
    const answer = await this.peers.ask(member, { statuses, snapshots: asked, eventsAfter: cursor });
    if (!answer.ok) return this.#fail(member, answer.why);
    const parsed = parseReplicaConsoleAnswer(answer.text);
    if (parsed === null)
      return this.#fail(member, `replica ${member} answered what is not a console answer of this version`);
    if (this.#failures.delete(member))
      this.#options.logger.info({ member }, "console: another replica answers again");
    const now = this.#options.now();
    if (parsed.statuses !== null) this.#keepStatuses(member, parsed.statuses, now);
    const changed = this.#keepSnapshots(member, parsed.snapshots, new Set(asked), now);
    // An answer of another incarnation than the one asked (it restarted meanwhile): its events next round.
    if (answer.identity !== identity) return { events: [], snapshots: changed };
    return { events: this.#takeEvents(member, identity, cursor, parsed.events), snapshots: changed };
  }

  #fail(member: string, why: string): { events: []; snapshots: [] } {
    if (this.#failures.get(member) !== why)
      this.#options.logger.warn({ member, why }, "console: another replica's console state cannot be had");
    this.#failures.set(member, why);
    return { events: [], snapshots: [] };
  }

  /** The statuses a member holds now: its entries replaced (an instance it no longer names is dropped). */
  #keepStatuses(member: string, list: NonNullable<ReplicaConsoleAnswer["statuses"]>, now: number): void {
    const named = new Set<string>();
    for (const { status, alarms } of list) {
      if (!this.#options.configured(status.id) || named.has(status.id)) continue;
      named.add(status.id);
      const own = alarms.filter((a) => a.instanceId === status.id);
      this.#remote.set(status.id, { member, status, alarms: own, at: now });
    }
    for (const [id, entry] of this.#remote)
      if (entry.member === member && !named.has(id)) this.#remote.delete(id);
  }

  /** The snapshots asked of a member; returns the instances whose snapshot changed. */
  #keepSnapshots(
    member: string,
    list: readonly SnapshotEventData[],
    asked: ReadonlySet<string>,
    now: number,
  ): string[] {
    const changed: string[] = [];
    for (const data of list) {
      const id = data.instanceId;
      if (!asked.has(id) || !this.#options.configured(id)) continue;
      const text = JSON.stringify(data);
      const before = this.#snapshots.get(id);
      if (before?.text !== text || before.member !== member) changed.push(id);
      this.#snapshots.set(id, { member, data, text, at: now });
    }
    return changed;
  }

  /** A member's events after the cursor, each once, stamped with the member that made them. */
  #takeEvents(
    member: string,
    identity: string,
    cursor: number,
    events: ReplicaConsoleAnswer["events"],
  ): WireRecentEvent[] {
    let last = events.next - 1 < cursor ? -1 : cursor;
    if (last >= 0 && events.oldest > last + 1) {
      this.#options.logger.warn(
        { member, missed: events.oldest - last - 1 },
        "console: events of another replica were not received: more happened between two asks than it keeps",
      );
    }
    const taken: WireRecentEvent[] = [];
    for (const { seq, event } of events.list) {
      if (seq <= last) continue;
      last = seq;
      const instanceId = event.kind === "alarm" ? event.alarm.instanceId : event.instanceId;
      if (this.#options.configured(instanceId)) taken.push({ ...event, by: member });
    }
    this.#cursors.set(member, { identity, cursor: last });
    return taken;
  }
}
