/**
 * What another replica's console answers (src/ui/replicas.ts), as schemas: the statuses, active
 * alarms and snapshots of the instances it holds and the recent events it made, in the page's wire
 * shapes (./wire.ts). Another replica is untrusted like any other source: every field is checked
 * here, with the bounds a PDU's answer has (src/pdu/bounds.ts), before anything of it is shown.
 */
import Type, { type Static, type TSchema } from "typebox";
import { Value } from "typebox/value";
import { PDU_BOUNDS } from "../pdu/bounds.js";
import type { SnapshotEventData, WireActiveAlarm, WireInstanceStatus, WireRecentEvent } from "./wire.js";

/** Events a replica keeps of its own for the others to ask for (and answers at most). */
export const OWN_EVENTS_KEPT = 256;

const text = (max: number = PDU_BOUNDS.textChars) => Type.String({ maxLength: max });
const id = () => text(PDU_BOUNDS.idChars);
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const count = () => Type.Integer({ minimum: 0, maximum: 1_000_000 });
const time = () => Type.String({ maxLength: 40 });
const detail = () => text(4096);
const InstanceId = Type.String({ minLength: 1, maxLength: 64 });
const Switch = Type.Union([Type.Literal("on"), Type.Literal("off"), Type.Literal("unknown")]);
const Mode = Type.Union([Type.Literal("single"), Type.Literal("oneview")]);
const Hidden = Type.Optional(Type.Literal(true));

const Alarm = Type.Object(
  { state: text(), severity: text(), raised: Type.Boolean() },
  { additionalProperties: false },
);
const Load = Type.Object(
  {
    current: nullable(Type.Number()),
    rating: nullable(Type.Number()),
    percent: nullable(Type.Number()),
    state: Type.Union([Type.Literal("normal"), Type.Literal("warning"), Type.Literal("critical")]),
  },
  { additionalProperties: false },
);
const Measurement = Type.Object(
  { type: id(), value: nullable(Type.Number()), units: text(PDU_BOUNDS.unitsChars), alarm: nullable(Alarm) },
  { additionalProperties: false },
);
const Measurements = Type.Array(Measurement, { maxItems: PDU_BOUNDS.measurementsPerPart });
const Unit = Type.Object(
  { label: text(), model: text(), serialNumber: text(), macAddress: text(), hostKey: nullable(id()) },
  { additionalProperties: false },
);

const ActiveAlarm = Type.Object(
  {
    instanceId: InstanceId,
    id: text(1024),
    deviceId: id(),
    target: Type.Union([
      Type.Object(
        { kind: Type.Literal("outlet"), index: Type.Integer({ minimum: 0 }) },
        { additionalProperties: false },
      ),
      Type.Object({ kind: Type.Literal("entity"), key: id() }, { additionalProperties: false }),
      Type.Object({ kind: Type.Literal("device") }, { additionalProperties: false }),
    ]),
    name: text(),
    source: Type.Union([
      Type.Literal("load"),
      Type.Literal("tripped"),
      Type.Literal("breaker-trip-suspected"),
      Type.Literal("pdu"),
    ]),
    severity: Type.Union([Type.Literal("warning"), Type.Literal("critical")]),
    percent: nullable(Type.Number()),
    reported: nullable(text()),
    sinceUtc: time(),
  },
  { additionalProperties: false },
);
const Alarms = Type.Array(ActiveAlarm, { maxItems: PDU_BOUNDS.outlets + PDU_BOUNDS.devices * 16 });

const InstanceStatus = Type.Object(
  {
    id: InstanceId,
    status: Type.Union([Type.Literal("online"), Type.Literal("failing"), Type.Literal("pending")]),
    host: text(),
    pollInterval: Type.Number({ minimum: 0, maximum: 86_400 }),
    actionsEnabled: Type.Boolean(),
    mode: nullable(Mode),
    lastPollUtc: nullable(time()),
    lastSuccessUtc: nullable(time()),
    lastError: nullable(detail()),
    consecutiveFailures: count(),
    devices: nullable(count()),
    outlets: nullable(count()),
    powerW: nullable(Type.Number()),
    loginError: nullable(detail()),
    label: nullable(text()),
    model: nullable(text()),
    alarms: Type.Object({ critical: count(), warning: count() }, { additionalProperties: false }),
    peak: nullable(Type.Object({ ...Load.properties, name: text() }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

const Outlet = Type.Object(
  {
    index: Type.Integer({ minimum: 0 }),
    name: text(),
    state: Switch,
    reported: Switch,
    alarm: Alarm,
    measurements: Measurements,
    load: nullable(Load),
    hidden: Hidden,
  },
  { additionalProperties: false },
);
const Entity = Type.Object(
  { key: id(), name: text(), alarm: Alarm, measurements: Measurements, load: nullable(Load), hidden: Hidden },
  { additionalProperties: false },
);
const Device = Type.Object(
  {
    id: id(),
    name: text(),
    state: text(),
    alarm: Alarm,
    outletControlEnabled: Type.Boolean(),
    canResetOutletEnergy: Type.Boolean(),
    canSwitchOutlets: Type.Boolean(),
    unit: Unit,
    outlets: Type.Array(Outlet, { maxItems: PDU_BOUNDS.outletsPerDevice }),
    entities: Type.Array(Entity, { maxItems: PDU_BOUNDS.entitiesPerDevice }),
  },
  { additionalProperties: false },
);
const GroupMeasurement = Type.Object(
  {
    key: id(),
    type: id(),
    units: text(PDU_BOUNDS.unitsChars),
    sum: nullable(Type.Number()),
    avg: nullable(Type.Number()),
    min: nullable(Type.Number()),
    max: nullable(Type.Number()),
  },
  { additionalProperties: false },
);
const Group = Type.Object(
  {
    key: id(),
    name: text(),
    state: text(),
    members: Type.Array(
      Type.Object({ deviceId: id(), index: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
      { maxItems: PDU_BOUNDS.outlets },
    ),
    measurements: Type.Array(GroupMeasurement, { maxItems: PDU_BOUNDS.measurementsPerPart }),
    hidden: Hidden,
  },
  { additionalProperties: false },
);
const Snapshot = Type.Object(
  {
    instanceId: InstanceId,
    timestampUtc: time(),
    mode: Mode,
    actionsEnabled: Type.Boolean(),
    unit: Unit,
    devices: Type.Array(Device, { maxItems: PDU_BOUNDS.devices }),
    groups: Type.Array(Group, { maxItems: PDU_BOUNDS.groups }),
    alarms: Alarms,
  },
  { additionalProperties: false },
);

const Target = Type.Union([
  Type.Object(
    { kind: Type.Literal("outlet"), deviceId: id(), index: Type.Integer({ minimum: 0 }) },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal("group"), groupKey: id() }, { additionalProperties: false }),
]);
const ControlEvent = Type.Object(
  {
    kind: Type.Literal("control"),
    instanceId: InstanceId,
    target: Target,
    action: text(64),
    ok: Type.Boolean(),
    status: Type.Integer({ minimum: 100, maximum: 599 }),
    detail: nullable(detail()),
    source: Type.Union([Type.Literal("rest"), Type.Literal("console"), Type.Literal("mqtt")]),
    user: nullable(Type.Object({ sub: text(512), name: text(512) }, { additionalProperties: false })),
    atUtc: time(),
    by: Type.Optional(text(63)),
  },
  { additionalProperties: false },
);
const AlarmEvent = Type.Object(
  {
    kind: Type.Literal("alarm"),
    change: Type.Union([Type.Literal("raised"), Type.Literal("changed"), Type.Literal("cleared")]),
    atUtc: time(),
    alarm: ActiveAlarm,
    by: Type.Optional(text(63)),
  },
  { additionalProperties: false },
);

const TrapEvent = Type.Object(
  {
    kind: Type.Literal("trap"),
    instanceId: InstanceId,
    atUtc: time(),
    trap: Type.Object(
      {
        kind: Type.Union(
          (
            ["outlet-switched", "breaker-tripped", "load-state", "sensor", "unit-restarted", "other"] as const
          ).map((k) => Type.Literal(k)),
        ),
        name: text(256),
        outlet: nullable(Type.Integer({ minimum: 1, maximum: 4096 })),
        state: nullable(text(256)),
        label: nullable(text(256)),
      },
      { additionalProperties: false },
    ),
    by: Type.Optional(text(63)),
  },
  { additionalProperties: false },
);

/** One entry of a replica's own events, numbered in the order it made them. */
const OwnEvent = Type.Object(
  { seq: Type.Integer({ minimum: 0 }), event: Type.Union([ControlEvent, AlarmEvent, TrapEvent]) },
  { additionalProperties: false },
);

/** What a replica's console answers another replica's ask (src/cluster/forward/ `CONSOLE_PATH`). */
export const ReplicaConsoleAnswer = Type.Object(
  {
    /** The instances it holds, each with its active alarms; null when the ask wanted none. */
    statuses: nullable(
      Type.Array(Type.Object({ status: InstanceStatus, alarms: Alarms }, { additionalProperties: false }), {
        maxItems: 100_000,
      }),
    ),
    /** The snapshots asked for, of the instances it holds (the others left out). */
    snapshots: Type.Array(Snapshot, { maxItems: 64 }),
    /**
     * Its own events after the ask's cursor, oldest first; `next` is the number its next event
     * will have, `oldest` the number of the oldest it still keeps.
     */
    events: Type.Object(
      {
        list: Type.Array(OwnEvent, { maxItems: OWN_EVENTS_KEPT }),
        oldest: Type.Integer({ minimum: 0 }),
        next: Type.Integer({ minimum: 0 }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** The answer as the types of the page's wire (the schema above checks exactly those). */
export interface ReplicaConsoleAnswer {
  readonly statuses:
    readonly { readonly status: WireInstanceStatus; readonly alarms: readonly WireActiveAlarm[] }[] | null;
  readonly snapshots: readonly SnapshotEventData[];
  readonly events: {
    readonly list: readonly { readonly seq: number; readonly event: WireRecentEvent }[];
    readonly oldest: number;
    readonly next: number;
  };
}

// The schema's type must be assignable to the wire's: a field the page reads that the schema
// forgot fails to compile here.
const _checked = (answer: Static<typeof ReplicaConsoleAnswer>): ReplicaConsoleAnswer => answer;
void _checked;

/** Another replica's answer, checked; null when it is not one (unparsable, or any field wrong). */
export function parseReplicaConsoleAnswer(text: string): ReplicaConsoleAnswer | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return Value.Check(ReplicaConsoleAnswer, value) ? value : null;
}
