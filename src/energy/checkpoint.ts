/**
 * The checkpoint of the lifetime counters (docs/energy.md, "Checkpoints"): what a restarted
 * bridge, or a replica taking a bucket over, continues from. One versioned format for both
 * backends: a file in `State.Dir` (./state-dir.ts) holds every instance; a record in the
 * coordination engine holds a bucket's (src/cluster/records.ts).
 *
 * ```json
 * { "format": "pdu-bridge/energy", "version": 1, "writtenAt": 1764316800000,
 *   "instances": { "rack-a1": { "seenAt": 1764316795000, "devices": [
 *     ["E4A1…", 1, [[0, 1234567.891, 1234567.891, 1764316790000], …], [["phase0", …], …]] ] } } }
 * ```
 *
 * Per counter: the outlet index (or entity key), the lifetime and the base reading (Wh, to a
 * thousandth), and since when a rise from the base may have accumulated (epoch ms). Everything
 * read is checked: a checkpoint that fails any check is refused whole with the place of the first
 * problem, never half read.
 */
import type { Counter } from "./counter.js";
import { emptyDevice, InstanceBook, type DeviceCounters } from "./book.js";

export const CHECKPOINT_FORMAT = "pdu-bridge/energy";
export const CHECKPOINT_VERSION = 1;

/** Bounds on what a checkpoint may hold (above those of any snapshot: src/pdu/bounds.ts). */
export const CHECKPOINT_BOUNDS = {
  instances: 10_000,
  devicesPerInstance: 1024,
  countersPerDevice: 8192,
  keyLength: 256,
  /** A lifetime beyond this (Wh: a thousand GWh) is no outlet's. */
  maxWh: 1e12,
};

const INSTANCE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A checkpoint that cannot be read: what is wrong and where (a JSON path). */
export class CheckpointError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
    /** The file is not a checkpoint of this service at all (another program's, or a newer version's). */
    readonly foreign = false,
  ) {
    super(`${path}: ${problem}`);
    this.name = "CheckpointError";
  }
}

type CounterRow = [number | string, number, number, number];
type DeviceRow = [string, number | null, CounterRow[], CounterRow[]];
/** One instance as a checkpoint holds it. */
export interface InstanceEntry {
  readonly seenAt: number;
  readonly devices: DeviceRow[];
}

export interface Checkpoint {
  readonly format: string;
  readonly version: number;
  readonly writtenAt: number;
  readonly instances: Record<string, InstanceEntry>;
}

const thousandth = (wh: number): number => Math.round(wh * 1000) / 1000;
/**
 * A lifetime to a thousandth, rounded up: a counter restored from a checkpoint is never below one
 * already published (Prometheus would read the smallest drop as a counter reset).
 */
const lifetimeThousandth = (wh: number): number => Math.ceil(wh * 1000 - 1e-6) / 1000;

function counterRow(key: number | string, c: Counter): CounterRow | null {
  if (Number.isNaN(c.baseWh)) return null;
  return [key, lifetimeThousandth(c.lifetimeWh), thousandth(c.baseWh), Math.round(c.from)];
}

/** One instance's counters as a checkpoint entry. */
export function entryOf(book: InstanceBook): InstanceEntry {
  const devices: DeviceRow[] = [];
  for (const d of book.devices.values()) {
    const outlets: CounterRow[] = [];
    for (const [index, c] of d.outlets) {
      const row = counterRow(index, c);
      if (row !== null) outlets.push(row);
    }
    const entities: CounterRow[] = [];
    for (const [key, c] of d.entities) {
      const row = counterRow(key, c);
      if (row !== null) entities.push(row);
    }
    devices.push([d.id, d.order, outlets, entities]);
  }
  return { seenAt: book.seenAt, devices };
}

/** A checkpoint of these entries, written now. */
export function checkpointOf(instances: Record<string, InstanceEntry>, writtenAt: number): Checkpoint {
  return { format: CHECKPOINT_FORMAT, version: CHECKPOINT_VERSION, writtenAt, instances };
}

/** The book an entry describes: every counter as checkpointed, its last reading at the entry's `seenAt`. */
export function bookOf(entry: InstanceEntry): InstanceBook {
  const book = new InstanceBook();
  book.seenAt = entry.seenAt;
  for (const [id, order, outlets, entities] of entry.devices) {
    const device: DeviceCounters = emptyDevice(id, order);
    for (const [index, lifetimeWh, baseWh, from] of outlets)
      device.outlets.set(Number(index), counter(lifetimeWh, baseWh, from, entry.seenAt));
    for (const [key, lifetimeWh, baseWh, from] of entities)
      device.entities.set(String(key), counter(lifetimeWh, baseWh, from, entry.seenAt));
    book.devices.set(id, device);
  }
  return book;
}

function counter(lifetimeWh: number, baseWh: number, from: number, seenAt: number): Counter {
  return { lifetimeWh, baseWh, from, seenAt, candidateWh: NaN, candidateFrom: 0 };
}

/** A parsed JSON value as a checkpoint, checked whole; throws {@link CheckpointError}. */
export function readCheckpoint(value: unknown): Checkpoint {
  if (!isObject(value)) throw new CheckpointError("$", "is not a JSON object", true);
  if (value.format !== CHECKPOINT_FORMAT)
    throw new CheckpointError(
      "$.format",
      `is not ${JSON.stringify(CHECKPOINT_FORMAT)}: not a pdu-bridge energy checkpoint`,
      true,
    );
  const version = value.version;
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1)
    throw new CheckpointError("$.version", "is not a version number");
  if (version > CHECKPOINT_VERSION)
    throw new CheckpointError(
      "$.version",
      `is ${version}: written by a newer pdu-bridge (this one reads ${CHECKPOINT_VERSION})`,
      true,
    );
  const writtenAt = time(value.writtenAt, "$.writtenAt");
  if (!isObject(value.instances)) throw new CheckpointError("$.instances", "is not an object");
  const ids = Object.keys(value.instances);
  if (ids.length > CHECKPOINT_BOUNDS.instances)
    throw new CheckpointError("$.instances", `holds more than ${CHECKPOINT_BOUNDS.instances} instances`);
  const instances: Record<string, InstanceEntry> = {};
  for (const id of ids) {
    const path = `$.instances[${JSON.stringify(id)}]`;
    if (!INSTANCE_ID.test(id)) throw new CheckpointError(path, "is not an instance id");
    instances[id] = readEntry(value.instances[id], path);
  }
  return { format: CHECKPOINT_FORMAT, version, writtenAt, instances };
}

/** One instance's entry, checked; throws {@link CheckpointError}. */
export function readEntry(value: unknown, path: string): InstanceEntry {
  if (!isObject(value)) throw new CheckpointError(path, "is not an object");
  const seenAt = time(value.seenAt, `${path}.seenAt`);
  const devices = value.devices;
  if (!Array.isArray(devices) || devices.length > CHECKPOINT_BOUNDS.devicesPerInstance)
    throw new CheckpointError(
      `${path}.devices`,
      `is not a list of at most ${CHECKPOINT_BOUNDS.devicesPerInstance} devices`,
    );
  const seen = new Set<string>();
  const rows = devices.map((d: unknown, i) => {
    const row = readDevice(d, `${path}.devices[${i}]`);
    if (seen.has(row[0])) throw new CheckpointError(`${path}.devices[${i}]`, "names a device twice");
    seen.add(row[0]);
    return row;
  });
  return { seenAt, devices: rows };
}

function readDevice(value: unknown, path: string): DeviceRow {
  if (!Array.isArray(value) || value.length !== 4)
    throw new CheckpointError(path, "is not [id, order, outlets, entities]");
  const [id, order, outlets, entities] = value as unknown[];
  if (typeof id !== "string" || id.length === 0 || id.length > CHECKPOINT_BOUNDS.keyLength)
    throw new CheckpointError(`${path}[0]`, "is not a device id");
  if (order !== null && (typeof order !== "number" || !Number.isFinite(order)))
    throw new CheckpointError(`${path}[1]`, "is not an order (a number or null)");
  return [
    id,
    order,
    readCounters(outlets, `${path}[2]`, "index"),
    readCounters(entities, `${path}[3]`, "key"),
  ];
}

function readCounters(value: unknown, path: string, kind: "index" | "key"): CounterRow[] {
  if (!Array.isArray(value) || value.length > CHECKPOINT_BOUNDS.countersPerDevice)
    throw new CheckpointError(
      path,
      `is not a list of at most ${CHECKPOINT_BOUNDS.countersPerDevice} counters`,
    );
  const keys = new Set<number | string>();
  return value.map((row: unknown, i): CounterRow => {
    const at = `${path}[${i}]`;
    if (!Array.isArray(row) || row.length !== 4)
      throw new CheckpointError(at, "is not [key, lifetimeWh, baseWh, from]");
    const [key, lifetimeWh, baseWh, from] = row as unknown[];
    const keyOk =
      kind === "index"
        ? typeof key === "number" && Number.isInteger(key) && key >= 0 && key < 1e9
        : typeof key === "string" && key.length > 0 && key.length <= CHECKPOINT_BOUNDS.keyLength;
    if (!keyOk || keys.has(key as number | string))
      throw new CheckpointError(`${at}[0]`, `is not an ${kind} (or names one twice)`);
    keys.add(key as number | string);
    return [
      key as number | string,
      wh(lifetimeWh, `${at}[1]`),
      wh(baseWh, `${at}[2]`),
      time(from, `${at}[3]`, true),
    ];
  });
}

function wh(value: unknown, path: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > CHECKPOINT_BOUNDS.maxWh)
    throw new CheckpointError(path, "is not an amount of energy in Wh");
  return value;
}

/** Epoch ms; `past`: may be before 1970 (a counter's `from` reaches back before its first reading). */
function time(value: unknown, path: string, past = false): number {
  const min = past ? -1e13 : 0;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > 1e13)
    throw new CheckpointError(path, "is not a time in epoch milliseconds");
  return value;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
