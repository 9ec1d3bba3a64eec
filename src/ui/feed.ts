/**
 * The console's live feed: turns the bus's events into server-sent events for the open streams of
 * `GET /api/v1/events` (`snapshot`, `status`, `control`, `alarm`, `trap`; on connect also `alarms`
 * and `recent`) and keeps the outlet power history and the recent events (src/ui/alarms.ts). A part
 * of the service (src/lifecycle.ts): from `start` it hears `snapshot` and `pollFailed` (status and
 * snapshot events, the history), `alarms` (alarm events and the recent ones), `control` (the control
 * core's outcomes, from REST and MQTT), `trap` (a trap an instance's PDU sent, src/traps/) and
 * `credentials` (an instance's login problem, in its status).
 * Among several replicas (`replicas`, ./replicas.ts) it shows the state of the instances it holds
 * from its own polls and that of the others from their holders, hears `ownershipChanged`, and
 * shows the events every replica made, each once. It hears `assets` (assets changed, the feed-loss
 * projection made again) and tells the pages in one folded `assets` event.
 *
 * Bounded everywhere, and per client, so that one client cannot lock the others out
 * (docs/reliability.md, "Console event streams"):
 * - at most `maxStreamsPerClient` streams per client address (an IPv6 client per /64), the address
 *   as `Api.TrustedProxies` resolves it (more are refused with 429);
 * - at most `maxStreams` in all; when they are all open, a newcomer takes a place (see
 *   {@link ConsoleFeed.admit}): a client holding k streams takes the oldest stream of the client
 *   holding the most, if that one holds at least k + 2 (so the streams end up shared, never passed
 *   back and forth); a signed-in console (a session, or the key checked by ProtectReads) takes the
 *   oldest anonymous stream, and anonymous streams never end a signed-in one; an anonymous client
 *   holding none takes the oldest anonymous stream once that has been open `rotateAfterMs`, so
 *   that clients holding one stream each from many addresses cannot keep everyone else out;
 *   otherwise 503;
 * - each stream is ended after `maxStreamAgeMs` (less up to a tenth, so that streams opened
 *   together do not end together), after a `reconnect` event: the page opens a new one at once and
 *   gets the full current state again, so nothing holds a stream for good;
 * - a stream whose socket buffers more than `maxBufferedBytes` (a consumer that does not read) is
 *   closed, never buffered without bound;
 * - each event is serialised once, however many streams get it.
 */
import type { ServerResponse } from "node:http";
import type {
  AlarmsEvent,
  AssetsEvent,
  ControlEvent,
  EventBus,
  OwnershipChangedEvent,
  TrapBusEvent,
} from "../bus.js";
import type { Config } from "../config/schema.js";
import { clientKey } from "../http/client-address.js";
import { SETTINGS_ACTION } from "../control/settings.js";
import type { Logger } from "../log.js";
import { ENERGY_LIFETIME, NO_ENERGY, type EnergyReader } from "../energy-reader.js";
import { EMPTY_REPORT } from "../pdu/load.js";
import type { Alarm, DeviceRoute, LoadReport, Measurement, PduSystem, Snapshot } from "../pdu/model.js";
import type { InstanceStatus, SnapshotStore, StoreEvent } from "../poller/store.js";
import { alarmCounts, alarmEvent, loadsByThing, peakLoad, RecentEvents, shownAlarms } from "./alarms.js";
import { PowerHistory } from "./history.js";
import { ReplicaConsole, type ReplicaAsk, type ReplicaPeers, type ReplicaUpdate } from "./replicas.js";
import {
  ASSETS_EVENT_MS,
  type AlarmsEventData,
  type AssetsEventData,
  type ControlEventData,
  type RecentEventData,
  type ReconnectEventData,
  type SnapshotEventData,
  type StatusEventData,
  type TrapEventData,
  type WireActiveAlarm,
  type WireAlarm,
  type WireInstanceStatus,
  type WireMeasurement,
  type WireRecentEvent,
  type WireUnit,
} from "./wire.js";

export { clientKey };

export const DEFAULT_MAX_STREAMS = 64;
/** Trap events of one instance shown (recent events, `trap` events) per second; the rest are not. */
export const TRAPS_SHOWN_PER_SECOND = 5;
/**
 * Streams one client address may hold: more than a browser opens to one origin over HTTP/1.1 (six
 * connections), so one person's tabs fit, and a few addresses cannot fill {@link DEFAULT_MAX_STREAMS}.
 */
export const DEFAULT_MAX_STREAMS_PER_CLIENT = 8;
/** How long a stream stays open before the service ends it (the page reconnects at once). */
export const DEFAULT_MAX_STREAM_AGE_MS = 15 * 60_000;
/** What a stream may have queued in its socket before it counts as a consumer that does not read. */
export const DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/**
 * How long an anonymous stream is kept from a newcomer holding none, when every client holds one
 * or two: long enough that streams are not passed round for nothing, short enough that a console
 * waits at most this (retrying every 5 s) while other addresses hold every place.
 */
export const DEFAULT_ROTATE_AFTER_MS = 60_000;
/** Retry-After (s) of a stream refused for the per-client or the overall limit. */
const REFUSED_RETRY_AFTER_S = 10;
/** Streams ended for a newcomer are logged at most this often (the rest counted in the next line). */
const EVICTION_LOG_MS = 60_000;
const HEARTBEAT_MS = 15_000;
/** How long the browser waits before reconnecting (the `retry:` field). */
const RETRY_MS = 2_000;

const iso = (ms: number): string => new Date(ms).toISOString();
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

const wireAlarm = (a: Alarm): WireAlarm => ({ state: a.state, severity: a.severity, raised: a.raised });
const wireMeasurements = (
  list: readonly Measurement[],
  lifetimeWh: number | null = null,
): WireMeasurement[] => {
  const out: WireMeasurement[] = [];
  for (const m of list) {
    // The lifetime counter is the bridge's own (src/energy/), whatever a PDU calls its readings.
    if (m.type === ENERGY_LIFETIME) continue;
    out.push({ type: m.type, value: m.value, units: m.units, alarm: m.alarm ? wireAlarm(m.alarm) : null });
  }
  if (lifetimeWh !== null)
    out.push({ type: ENERGY_LIFETIME, value: Math.floor(lifetimeWh) / 1000, units: "kWh", alarm: null });
  return out;
};
// The route is the driver's own data: its member key is shown only when the driver has one.
const wireUnit = (system: PduSystem, route: DeviceRoute | null): WireUnit => ({
  label: system.label,
  model: system.model,
  serialNumber: system.serialNumber,
  macAddress: system.macAddress,
  hostKey: typeof route?.hostKey === "string" ? route.hostKey : null,
});

/** `hidden: true` on what the overrides hide, as REST readings mark it; nothing on the rest. */
const hiddenMark = (hidden: true | undefined): { hidden?: true } => (hidden === true ? { hidden } : {});

/**
 * The `snapshot` event of an instance: `snapshot` with latches applied, `polled` as the PDU reported
 * it. Outlets, entities and groups hidden by the overrides are in it, marked `hidden: true` (a
 * group's members name them, and a group action switches them); the console leaves them out of its
 * views.
 */
export function snapshotEventData(
  snapshot: Snapshot,
  polled: Snapshot | null,
  actionsEnabled: boolean,
  load: LoadReport = EMPTY_REPORT,
  energy: EnergyReader = NO_ENERGY,
): SnapshotEventData {
  const loads = loadsByThing(load);
  return {
    instanceId: snapshot.instanceId,
    timestampUtc: iso(snapshot.timestamp),
    mode: snapshot.mode,
    actionsEnabled,
    unit: wireUnit(snapshot.system, null),
    devices: snapshot.devices.map((device, d) => {
      // The store replaces only latched outlets' objects, so devices line up by position.
      const reported = polled?.devices[d]?.id === device.id ? polled.devices[d] : undefined;
      return {
        id: device.id,
        name: device.displayName,
        state: device.state,
        alarm: wireAlarm(device.alarm),
        outletControlEnabled: device.outletControlEnabled,
        canResetOutletEnergy: device.canResetOutletEnergy,
        canSwitchOutlets: device.canSwitchOutlets,
        unit: wireUnit(device.system, device.route),
        outlets: device.outlets.map((outlet, o) => {
          const was = reported?.outlets[o];
          return {
            index: outlet.index,
            name: outlet.displayName,
            state: outlet.state,
            reported: was?.index === outlet.index ? was.state : outlet.state,
            alarm: wireAlarm(outlet.alarm),
            measurements: wireMeasurements(
              outlet.measurements,
              energy.outletWh(snapshot.instanceId, device.id, outlet.index),
            ),
            load: loads.outlet(device.id, outlet.index),
            ...hiddenMark(outlet.hidden),
          };
        }),
        entities: device.entities.map((entity) => ({
          key: entity.key,
          name: entity.displayName,
          alarm: wireAlarm(entity.alarm),
          measurements: wireMeasurements(
            entity.measurements,
            energy.entityWh(snapshot.instanceId, device.id, entity.key),
          ),
          load: loads.entity(device.id, entity.key),
          ...hiddenMark(entity.hidden),
        })),
      };
    }),
    groups: snapshot.groups.map((group) => ({
      key: group.key,
      name: group.displayName,
      state: group.state,
      members: group.members.map((m) => ({ deviceId: m.deviceId, index: m.index })),
      measurements: group.measurements.map((m) => ({ ...m })),
      ...hiddenMark(group.hidden),
    })),
    alarms: shownAlarms(snapshot.instanceId, load),
  };
}

/** The sum of the real power of the outlets the console shows (hidden ones left out), or null. */
function totalPower(snapshot: Snapshot): number | null {
  let sum = 0;
  let any = false;
  for (const device of snapshot.devices) {
    for (const outlet of device.outlets) {
      if (outlet.hidden === true) continue;
      const value = outlet.measurements.find((m) => m.type === "realPower")?.value;
      if (typeof value === "number") {
        sum += value;
        any = true;
      }
    }
  }
  return any ? Math.round(sum * 100) / 100 : null;
}

export function instanceStatusData(
  status: InstanceStatus,
  config: Config,
  loginProblem: (instanceId: string) => string | null = () => null,
): WireInstanceStatus {
  const instance = config.instances.find((i) => i.id === status.id);
  const snapshot = status.snapshot;
  return {
    id: status.id,
    status: status.consecutiveFailures > 0 ? "failing" : snapshot ? "online" : "pending",
    host: instance?.Connection.Host ?? "",
    pollInterval: instance?.PollInterval ?? 0,
    actionsEnabled: instance?.ActionsEnabled ?? false,
    mode: snapshot?.mode ?? null,
    lastPollUtc: isoOrNull(status.lastPollUtc),
    lastSuccessUtc: isoOrNull(status.lastSuccessUtc),
    lastError: status.lastError,
    consecutiveFailures: status.consecutiveFailures,
    devices: snapshot ? snapshot.devices.length : null,
    outlets: snapshot
      ? snapshot.devices.reduce((n, d) => n + d.outlets.filter((o) => o.hidden !== true).length, 0)
      : null,
    powerW: snapshot ? totalPower(snapshot) : null,
    loginError: loginProblem(status.id),
    label: snapshot ? snapshot.system.label : null,
    model: snapshot ? snapshot.system.model : null,
    alarms: alarmCounts(status.load),
    peak: peakLoad(status.load),
  };
}

const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * The status of an instance held elsewhere when its holder's state is not here: what the
 * configuration says (and the login check, made on every replica) and no value of any poll, so
 * that nothing old is shown as if current.
 */
function blankStatus(local: WireInstanceStatus): WireInstanceStatus {
  return {
    ...local,
    status: "pending",
    mode: null,
    lastPollUtc: null,
    lastSuccessUtc: null,
    lastError: null,
    consecutiveFailures: 0,
    devices: null,
    outlets: null,
    powerW: null,
    label: null,
    model: null,
    alarms: { critical: 0, warning: 0 },
    peak: null,
  };
}

/** Worst first, as the `alarms` event lists them. */
const bySeverity = (a: WireActiveAlarm, b: WireActiveAlarm): number =>
  a.severity === b.severity ? 0 : a.severity === "critical" ? -1 : 1;

/** Snapshots of PDU views asked of other replicas at most (the protocol's bound). */
const ASKED_SNAPSHOTS_MAX = 64;

interface StreamFilter {
  /** Snapshot events of this instance only; null: of every instance. */
  readonly instanceId: string | null;
  readonly snapshots: boolean;
}

interface Stream extends StreamFilter {
  readonly response: ServerResponse;
  /** The client's address, and the key its streams are counted under ({@link clientKey}). */
  readonly client: string;
  readonly key: string;
  /** Opened by a signed-in console (a session, or the key checked by ProtectReads). */
  readonly signedIn: boolean;
  /** When it was opened (epoch ms, the feed's clock). */
  readonly opened: number;
  /** Ends the stream at its maximum age. */
  expiry: NodeJS.Timeout | null;
  /**
   * Instances whose current snapshot is still to be sent after the connect (written one at a time,
   * waiting for the socket to drain: a whole fleet's snapshots are megabytes). Live snapshot events
   * of these are skipped: the backlog sends them fresh.
   */
  backlog: Set<string> | null;
}

/** The bounds of the event streams (defaults: the `DEFAULT_…` constants above). */
export interface ConsoleLimits {
  readonly maxStreams?: number;
  readonly maxStreamsPerClient?: number;
  readonly maxStreamAgeMs?: number;
  readonly maxBufferedBytes?: number;
  readonly rotateAfterMs?: number;
}

export interface ConsoleFeedOptions extends ConsoleLimits {
  /** What the feed follows. */
  readonly bus: EventBus;
  readonly store: SnapshotStore;
  /** The configuration in force (a getter: poll intervals may change live). */
  readonly config: () => Config;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Why control of an instance will fail (its login was refused at start), or null. */
  readonly loginProblem?: (instanceId: string) => string | null;
  /** Among several replicas: the cluster and the other replicas' consoles (./replicas.ts). */
  readonly replicas?: ReplicaPeers;
  /** The lifetime energy counters, shown with each outlet's and entity's measurements; default none. */
  readonly energy?: EnergyReader;
}

/** Why a stream was not opened: the answer's status, its detail and its Retry-After. */
export interface StreamRefusal {
  readonly status: 429 | 503;
  readonly detail: string;
  readonly retryAfter: number;
}

/** The oldest of `streams` (oldest first) of the client holding the most of them, if at least `least`. */
function oldestOfHeaviest(streams: readonly Stream[], least: number): Stream | null {
  const counts = new Map<string, number>();
  let heaviest: string | null = null;
  let most = 0;
  for (const s of streams) {
    const n = (counts.get(s.key) ?? 0) + 1;
    counts.set(s.key, n);
    if (n > most) [heaviest, most] = [s.key, n];
  }
  if (heaviest === null || most < least) return null;
  return streams.find((s) => s.key === heaviest) ?? null;
}

export class ConsoleFeed {
  readonly name = "console";
  readonly history: PowerHistory;
  readonly maxStreams: number;
  readonly maxStreamsPerClient: number;
  readonly maxStreamAgeMs: number;
  readonly rotateAfterMs: number;
  readonly #options: ConsoleFeedOptions;
  readonly #maxBuffered: number;
  /** Open streams, oldest first. */
  readonly #streams = new Set<Stream>();
  /** Open streams per client key. */
  readonly #perClient = new Map<string, number>();
  /** Alarm changes and control outcomes, sent to a page when it connects. */
  readonly #recent = new RecentEvents();
  /** Trap events shown in the current second, per configured instance. */
  readonly #trapsShown = new Map<string, { second: number; count: number }>();
  #heartbeat: NodeJS.Timeout | null = null;
  #closed = false;
  #evictionLoggedAt = Number.NEGATIVE_INFINITY;
  #evictionsFolded = 0;
  /** Among several replicas: the other replicas' consoles (./replicas.ts); null in one process. */
  readonly replicas: ReplicaConsole | null;
  /** Among several replicas: the status last sent of each instance held elsewhere (changes are sent). */
  readonly #sentElsewhere = new Map<string, string>();
  /** Among several replicas: the other replicas' active alarms as last sent. */
  #sentRemoteAlarms = "";
  /** The configured ids, per configuration (live changes replace it). */
  #ids: { config: Config; ids: ReadonlySet<string> } | null = null;
  /** Asset changes heard since the last `assets` event, and the timer that sends it. */
  #assetsFolded: AssetsEventData | null = null;
  #assetsTimer: NodeJS.Timeout | undefined;

  constructor(options: ConsoleFeedOptions) {
    this.#options = options;
    this.maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    this.maxStreamsPerClient = options.maxStreamsPerClient ?? DEFAULT_MAX_STREAMS_PER_CLIENT;
    this.maxStreamAgeMs = options.maxStreamAgeMs ?? DEFAULT_MAX_STREAM_AGE_MS;
    this.rotateAfterMs = options.rotateAfterMs ?? DEFAULT_ROTATE_AFTER_MS;
    this.#maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.history = new PowerHistory(
      (id) => options.config().instances.find((i) => i.id === id)?.PollInterval ?? 5,
    );
    this.replicas =
      options.replicas === undefined
        ? null
        : new ReplicaConsole(options.replicas, {
            logger: options.logger,
            now: () => this.now,
            configured: (id) => this.#configured(id),
            wants: () => this.#replicaWants(),
            changed: (update) => this.#onReplicas(update),
          });
  }

  #configured(id: string): boolean {
    const config = this.#options.config();
    if (this.#ids?.config !== config) this.#ids = { config, ids: new Set(config.instances.map((i) => i.id)) };
    return this.#ids.ids.has(id);
  }

  /** Whether this replica polls the instance (always in one process). */
  #held(id: string): boolean {
    return this.replicas === null || this.replicas.peers.holds(id);
  }

  /** Follows the bus from now on. */
  start(): void {
    if (this.#closed) return;
    const onStoreEvent = (event: StoreEvent): void => this.#onStoreEvent(event);
    this.#options.bus.listen(this, {
      snapshot: onStoreEvent,
      pollFailed: onStoreEvent,
      alarms: (event) => this.#onAlarms(event),
      control: (event) => this.#onControl(event),
      trap: (event) => this.#onTrap(event),
      credentials: ({ instanceId }) => this.statusChanged(instanceId),
      ownershipChanged: (event) => this.#onOwnership(event),
      assets: (event) => this.#onAssets(event),
    });
    this.replicas?.start();
  }

  /** {@link close}. */
  stop(): void {
    this.close();
  }

  get now(): number {
    return (this.#options.now ?? Date.now)();
  }

  /** Open streams. */
  get streams(): number {
    return this.#streams.size;
  }

  /** Open streams of one client address (counted under its {@link clientKey}). */
  streamsOf(client: string): number {
    return this.#perClient.get(clientKey(client)) ?? 0;
  }

  /**
   * Whether `client` (its address, as `Api.TrustedProxies` resolves it; `signedIn` for a console
   * session or the key checked by ProtectReads) may open a stream now, or why not. At the overall
   * limit this may end another stream to make room (see the file's note and {@link #victim}), so
   * call it only right before {@link open}.
   */
  admit(client: string, signedIn = false): StreamRefusal | null {
    if (this.#closed) {
      return {
        status: 503,
        detail: "the service is stopping; try again shortly",
        retryAfter: REFUSED_RETRY_AFTER_S,
      };
    }
    const own = this.#perClient.get(clientKey(client)) ?? 0;
    if (own >= this.maxStreamsPerClient) {
      return {
        status: 429,
        detail:
          `${own} event streams are open from ${client} already, the most one client address may hold; ` +
          "close one (another tab of the console?) or try again later",
        retryAfter: REFUSED_RETRY_AFTER_S,
      };
    }
    if (this.#streams.size < this.maxStreams) return null;
    const victim = this.#victim(own, signedIn);
    if (victim === null) {
      return {
        status: 503,
        detail: `${this.maxStreams} event streams are open already; close one or try again later`,
        retryAfter: REFUSED_RETRY_AFTER_S,
      };
    }
    this.#logEviction(victim, client);
    this.#drop(victim);
    victim.response.end();
    return null;
  }

  /**
   * The stream a newcomer holding `own` streams may end, or null. A signed-in newcomer ends an
   * anonymous stream while there is one (the oldest of the client holding the most anonymous
   * ones). Otherwise, among the streams the newcomer may end (a signed-in one any, an anonymous one
   * only anonymous ones): the oldest of the client holding the most, if that holds at least own +
   * 2; for an anonymous newcomer holding none, the oldest anonymous stream open `rotateAfterMs`.
   */
  #victim(own: number, signedIn: boolean): Stream | null {
    const anonymous = [...this.#streams].filter((s) => !s.signedIn);
    if (signedIn && anonymous.length > 0) return oldestOfHeaviest(anonymous, 0);
    const fair = oldestOfHeaviest(signedIn ? [...this.#streams] : anonymous, own + 2);
    if (fair !== null || signedIn || own > 0) return fair;
    const cutoff = this.now - this.rotateAfterMs;
    return anonymous.find((s) => s.opened <= cutoff) ?? null;
  }

  /** One info line a minute at most; the ones folded are counted in the next. */
  #logEviction(victim: Stream, client: string): void {
    const now = this.now;
    if (now - this.#evictionLoggedAt < EVICTION_LOG_MS) {
      this.#evictionsFolded++;
      return;
    }
    const folded = this.#evictionsFolded;
    this.#evictionLoggedAt = now;
    this.#evictionsFolded = 0;
    this.#options.logger.info(
      {
        client: victim.client,
        streams: this.#perClient.get(victim.key) ?? 0,
        signedIn: victim.signedIn,
        for: client,
        ...(folded > 0 ? { endedBefore: folded } : {}),
      },
      "console feed: ended an event stream to make room for another client (the oldest of the client holding the most, else the oldest anonymous one)",
    );
  }

  /**
   * Starts an event stream on `response` (headers not yet written) for `client` (admitted by
   * {@link admit} just before), or returns false when the feed is closed. Sends the current status
   * of every instance and the wanted snapshots.
   */
  open(
    response: ServerResponse,
    headers: Record<string, string>,
    filter: StreamFilter,
    client: string,
    signedIn = false,
  ): boolean {
    if (this.#closed) return false;
    const key = clientKey(client);
    const stream: Stream = {
      response,
      ...filter,
      client,
      key,
      signedIn,
      opened: this.now,
      expiry: null,
      backlog: null,
    };
    this.#streams.add(stream);
    this.#perClient.set(key, (this.#perClient.get(key) ?? 0) + 1);
    response.on("close", () => this.#drop(stream));
    // Streams opened together (after a restart, every console at once) do not all end together.
    const age = Math.round(this.maxStreamAgeMs * (1 - Math.random() / 10));
    stream.expiry = setTimeout(() => this.#expire(stream), age).unref();
    response.writeHead(200, headers);
    const { store } = this.#options;
    const config = this.#options.config();
    let text = `retry: ${RETRY_MS}\n\n`;
    text += frame("status", {
      instances: store.list().map((s) => this.#statusData(s, config)),
    } satisfies StatusEventData);
    text += frame("alarms", { alarms: this.#activeAlarms() } satisfies AlarmsEventData);
    text += frame("recent", { events: this.#recent.list() } satisfies RecentEventData);
    // The state on connect is written whole (its size follows the fleet's, which may be more than
    // the limit); what comes after it counts against the limit.
    response.write(text);
    const backlog = store
      .list()
      .filter((status) => this.#hasSnapshot(status) && this.#wants(stream, status.id));
    // A PDU view of an instance held elsewhere: its holder's snapshot at once, not in a round.
    if (filter.instanceId !== null && filter.snapshots && !this.#held(filter.instanceId))
      this.replicas?.soon();
    if (backlog.length > 0) {
      stream.backlog = new Set(backlog.map((status) => status.id));
      this.#sendBacklog(stream).catch((error: unknown) => {
        this.#options.logger.warn({ err: error }, "console feed: could not send the current snapshots");
        response.destroy();
      });
    }
    this.#heartbeat ??= setInterval(() => this.#broadcast(": ping\n\n"), HEARTBEAT_MS).unref();
    return true;
  }

  /** Forgets a stream (closed by either side, dropped or expired); safe to call more than once. */
  #drop(stream: Stream): void {
    if (!this.#streams.delete(stream)) return;
    if (stream.expiry !== null) clearTimeout(stream.expiry);
    stream.expiry = null;
    const left = (this.#perClient.get(stream.key) ?? 1) - 1;
    if (left > 0) this.#perClient.set(stream.key, left);
    else this.#perClient.delete(stream.key);
  }

  /** The stream reached its maximum age: a `reconnect` event, then the end. */
  #expire(stream: Stream): void {
    if (!this.#streams.has(stream)) return;
    this.#drop(stream);
    const { response } = stream;
    if (response.destroyed || response.writableEnded) return;
    response.end(frame("reconnect", { reason: "age" } satisfies ReconnectEventData));
  }

  async #sendBacklog(stream: Stream): Promise<void> {
    const { response } = stream;
    for (const id of stream.backlog ?? []) {
      if (response.destroyed || response.writableEnded) break;
      stream.backlog?.delete(id);
      const text = this.#snapshotFrame(id);
      if (text !== "" && !response.write(text)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            response.off("drain", done);
            response.off("close", done);
            resolve();
          };
          response.on("drain", done);
          response.on("close", done);
        });
      }
    }
    stream.backlog = null;
  }

  /** Ends every stream and stops following the bus (on shutdown). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#assetsTimer);
    this.#assetsTimer = undefined;
    this.replicas?.stop();
    this.closeStreams();
    this.#options.bus.release(this);
  }

  /** Ends every open stream (the listener closes: nothing may hold its connections open). */
  closeStreams(): void {
    for (const stream of [...this.#streams]) {
      this.#drop(stream);
      stream.response.end();
    }
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
  }

  #wants(stream: Stream, instanceId: string): boolean {
    return stream.snapshots && (stream.instanceId === null || stream.instanceId === instanceId);
  }

  /** Whether there is a snapshot of the instance to show: its own, or its holder's. */
  #hasSnapshot(status: InstanceStatus): boolean {
    if (this.#held(status.id)) return status.snapshot !== null;
    return (this.replicas?.snapshotOf(status.id) ?? null) !== null;
  }

  #snapshotFrame(instanceId: string): string {
    if (!this.#held(instanceId)) {
      const remote = this.replicas?.snapshotOf(instanceId) ?? null;
      return remote === null ? "" : frame("snapshot", remote);
    }
    const { store } = this.#options;
    const status = store.get(instanceId);
    if (!status?.snapshot) return "";
    const actionsEnabled =
      this.#options.config().instances.find((i) => i.id === instanceId)?.ActionsEnabled ?? false;
    return frame(
      "snapshot",
      snapshotEventData(
        status.snapshot,
        store.polled(instanceId),
        actionsEnabled,
        status.load,
        this.#options.energy,
      ),
    );
  }

  /** Alarms a snapshot raised, changed or cleared: kept among the recent events, and sent as `alarm` events. */
  #onAlarms({ instanceId, changes }: AlarmsEvent): void {
    // Among several replicas, an instance's alarms are its holder's.
    if (!this.#held(instanceId)) return;
    let alarms = "";
    for (const change of changes) {
      if (change.alarm.hidden === true) continue;
      const event = this.#own({ kind: "alarm", ...alarmEvent(instanceId, change) });
      this.#recent.add(event);
      const { kind: _kind, ...data } = event;
      alarms += frame("alarm", data);
    }
    if (this.#streams.size > 0 && alarms !== "") this.#broadcast(alarms);
  }

  #onStoreEvent(event: StoreEvent): void {
    if (event.kind === "snapshot" && event.fromPoll) this.history.record(event.snapshot);
    // A snapshot kept from a time this replica held the instance is not its state now.
    if (this.#streams.size === 0 || !this.#held(event.instanceId)) return;
    const status = this.#options.store.get(event.instanceId);
    if (!status) return;
    this.#broadcast(
      frame("status", {
        instances: [this.#statusData(status, this.#options.config())],
      } satisfies StatusEventData),
    );
    if (event.kind !== "snapshot") return;
    let text: string | null = null; // serialised once, only when a stream wants it
    for (const stream of [...this.#streams]) {
      if (!this.#wants(stream, event.instanceId) || stream.backlog?.has(event.instanceId)) continue;
      text ??= this.#snapshotFrame(event.instanceId);
      this.#write(stream, text);
    }
  }

  /** Something of an instance's status other than a poll changed (its login check): a `status` event. */
  statusChanged(instanceId: string): void {
    const status = this.#options.store.get(instanceId);
    if (status === undefined || this.#streams.size === 0) return;
    this.#broadcast(
      frame("status", {
        instances: [this.#statusData(status, this.#options.config())],
      } satisfies StatusEventData),
    );
  }

  /**
   * The status the pages get: this replica's own; among several replicas marked with its holder,
   * and for an instance held elsewhere its holder's latest or none (./replicas.ts).
   */
  #statusData(status: InstanceStatus, config: Config): WireInstanceStatus {
    const local = instanceStatusData(status, config, this.#options.loginProblem);
    if (this.replicas === null) return local;
    const { peers } = this.replicas;
    if (peers.holds(status.id))
      return { ...local, replica: { holder: peers.member, here: true, state: "own", note: null } };
    return this.replicas.statusOf(status.id, blankStatus(local));
  }

  /** The active alarms of every instance: its own from its polls, the others' from their holders. */
  #activeAlarms(): WireActiveAlarm[] {
    const alarms = this.#options.store
      .list()
      .filter((s) => this.#held(s.id))
      .flatMap((s) => shownAlarms(s.id, s.load));
    if (this.replicas !== null) alarms.push(...this.replicas.alarms());
    return alarms.sort(bySeverity);
  }

  /** One of this replica's own events: numbered for the other replicas among several (./replicas.ts). */
  #own<E extends WireRecentEvent>(event: E): E {
    return this.replicas?.record(event) ?? event;
  }

  /**
   * What this replica's console shows of the instances it holds, as another replica asks for it
   * (src/cluster/forward/route.ts answers with it, signed); null in one process.
   */
  replicaAnswer(ask: ReplicaAsk): string | null {
    if (this.replicas === null) return null;
    const { store, loginProblem } = this.#options;
    const config = this.#options.config();
    return this.replicas.answer(ask, {
      statuses: () =>
        store
          .list()
          .filter((s) => this.#held(s.id))
          .map((s) => ({
            status: instanceStatusData(s, config, loginProblem),
            alarms: shownAlarms(s.id, s.load),
          })),
      snapshot: (id) => {
        const status = store.get(id);
        if (status === undefined || status.snapshot === null) return null;
        const actionsEnabled = config.instances.find((i) => i.id === id)?.ActionsEnabled ?? false;
        return snapshotEventData(status.snapshot, store.polled(id), actionsEnabled, status.load);
      },
    });
  }

  /** What the pages open here want of the other replicas now (./replicas.ts asks for it). */
  #replicaWants(): { statuses: boolean; snapshots: string[] } {
    const snapshots = new Set<string>();
    for (const stream of this.#streams) {
      const id = stream.instanceId;
      if (stream.snapshots && id !== null && !this.#held(id)) snapshots.add(id);
    }
    return { statuses: this.#streams.size > 0, snapshots: [...snapshots].slice(0, ASKED_SNAPSHOTS_MAX) };
  }

  /** Instances changed hands here: their statuses and the active alarms again, and the others asked soon. */
  #onOwnership({ gained, lost }: OwnershipChangedEvent): void {
    if (this.replicas === null) return;
    this.replicas.soon();
    if (this.#streams.size === 0) return;
    const config = this.#options.config();
    const instances: WireInstanceStatus[] = [];
    for (const id of [...gained, ...lost]) {
      const status = this.#options.store.get(id);
      if (status === undefined) continue;
      const data = this.#statusData(status, config);
      if (this.#held(id)) this.#sentElsewhere.delete(id);
      else this.#sentElsewhere.set(id, JSON.stringify(data));
      instances.push(data);
    }
    let text = frame("status", { instances } satisfies StatusEventData);
    text += frame("alarms", { alarms: this.#activeAlarms() } satisfies AlarmsEventData);
    this.#broadcast(text);
  }

  /**
   * A round of asks of the other replicas ended: their new events (each once), the snapshots of
   * PDU views open here, the statuses of the instances held elsewhere that changed, and the active
   * alarms when theirs changed.
   */
  #onReplicas(update: ReplicaUpdate): void {
    for (const event of update.events) {
      this.#recent.insert(event);
      const { kind, ...data } = event;
      if (this.#streams.size > 0) this.#broadcast(frame(kind, data));
    }
    if (this.#streams.size === 0 || this.replicas === null) {
      this.#sentElsewhere.clear();
      this.#sentRemoteAlarms = "";
      return;
    }
    for (const id of update.snapshots) {
      let text: string | null = null;
      for (const stream of [...this.#streams]) {
        if (!this.#wants(stream, id) || stream.backlog?.has(id)) continue;
        text ??= this.#snapshotFrame(id);
        if (text !== "") this.#write(stream, text);
      }
    }
    const config = this.#options.config();
    const changed: WireInstanceStatus[] = [];
    for (const status of this.#options.store.list()) {
      if (this.#held(status.id)) {
        this.#sentElsewhere.delete(status.id);
        continue;
      }
      const data = this.#statusData(status, config);
      const text = JSON.stringify(data);
      if (this.#sentElsewhere.get(status.id) === text) continue;
      this.#sentElsewhere.set(status.id, text);
      changed.push(data);
    }
    if (changed.length > 0)
      this.#broadcast(frame("status", { instances: changed } satisfies StatusEventData));
    const remote = JSON.stringify(this.replicas.alarms());
    if (remote !== this.#sentRemoteAlarms) {
      this.#sentRemoteAlarms = remote;
      this.#broadcast(frame("alarms", { alarms: this.#activeAlarms() } satisfies AlarmsEventData));
    }
  }

  /**
   * A control attempt: the control core's outcome of a command (not a settings write: the console
   * shows switching) goes to every stream as a `control` event.
   */
  #onControl(event: ControlEvent): void {
    const { target, instanceId } = event;
    if (!event.fromCore || event.action === null || event.action === SETTINGS_ACTION) return;
    if (instanceId === null || target === null || (target.kind !== "outlet" && target.kind !== "group"))
      return;
    const ok = event.status === 200;
    const data: ControlEventData = {
      instanceId,
      target:
        target.kind === "outlet"
          ? { kind: "outlet", deviceId: target.deviceId, index: target.index }
          : { kind: "group", groupKey: target.groupKey },
      action: event.action,
      ok,
      status: event.status,
      detail: ok ? null : (event.detail ?? null),
      source: event.source.surface,
      user: event.source.surface === "console" ? { ...event.source.user } : null,
      atUtc: iso(this.now),
    };
    const { kind: _kind, ...made } = this.#own({ kind: "control", ...data });
    this.#recent.add({ kind: "control", ...made });
    if (this.#streams.size > 0) this.#broadcast(frame("control", made));
  }

  /**
   * A trap from an instance's PDU (src/traps/): kept among the recent events and sent as a `trap`
   * event, at most {@link TRAPS_SHOWN_PER_SECOND} a second per instance (a PDU that floods fills
   * neither the panel nor the streams; its traps are still counted in the metrics).
   */
  #onTrap({ instanceId, at, event }: TrapBusEvent): void {
    if (!this.#held(instanceId) || !this.#configured(instanceId)) return;
    const second = Math.floor(at / 1000);
    const shown = this.#trapsShown.get(instanceId);
    if (shown?.second === second && shown.count >= TRAPS_SHOWN_PER_SECOND) return;
    this.#trapsShown.set(instanceId, { second, count: shown?.second === second ? shown.count + 1 : 1 });
    const data: TrapEventData = {
      instanceId,
      atUtc: iso(at),
      trap: {
        kind: event.kind,
        name: event.trap,
        outlet: event.outlet,
        state: event.state,
        label: event.label,
      },
    };
    const { kind: _kind, ...made } = this.#own({ kind: "trap", ...data });
    this.#recent.add({ kind: "trap", ...made });
    if (this.#streams.size > 0) this.#broadcast(frame("trap", made));
  }

  /**
   * Assets changed or the projection was made again: folded into one `assets` event per
   * {@link ASSETS_EVENT_MS} (a poll of each of a thousand PDUs moves some asset every time), which
   * tells the pages to read the assets and feeds again.
   */
  #onAssets(event: AssetsEvent): void {
    if (this.#streams.size === 0 || this.#closed) return;
    const folded = this.#assetsFolded ?? { changed: 0, feeds: false, reconfigured: false };
    this.#assetsFolded = {
      changed: folded.changed + event.assets.length,
      feeds: folded.feeds || event.feeds,
      reconfigured: folded.reconfigured || event.reconfigured,
    };
    this.#assetsTimer ??= setTimeout(() => {
      this.#assetsTimer = undefined;
      const data = this.#assetsFolded;
      this.#assetsFolded = null;
      if (data !== null && this.#streams.size > 0) this.#broadcast(frame("assets", data));
    }, ASSETS_EVENT_MS).unref();
  }

  #broadcast(text: string): void {
    for (const stream of [...this.#streams]) this.#write(stream, text);
  }

  /** Writes, or closes a stream that stopped reading (its socket buffer over the limit). */
  #write(stream: Stream, text: string): void {
    const response = stream.response;
    if (response.destroyed || response.writableEnded) {
      this.#drop(stream);
      return;
    }
    response.write(text);
    if (response.writableLength > this.#maxBuffered) {
      this.#drop(stream);
      this.#options.logger.warn(
        { client: stream.client, bufferedBytes: response.writableLength },
        "console feed: closed an event stream whose client does not read",
      );
      response.destroy();
    }
  }
}
