/**
 * What each feed carries now (`GET /api/v1/feeds`: the total load per feed), pure: the
 * sum over the devices on the feed of each device's own total. A device's total is read from the
 * entities that carry all of it, the first kind it has of `total`, `inlet`, `cord`, `line` and
 * `phase` (their sum: a unit's inlets, cords, lines or phases together carry the whole unit), else
 * from its outlets' sum. A device on the feed whose instance has no current reading (never polled,
 * or its last poll failed) makes the sums unknown (null) rather than low, and is listed.
 */
import { entityKind } from "../pdu/load.js";
import type { Device, Measurement } from "../pdu/model.js";
import type { InstanceReading } from "./state.js";
import { feedOf, type AssetModel } from "./types.js";

/** Kinds whose entities together carry a whole device, in the order they are preferred. */
const WHOLE_KINDS = ["total", "inlet", "cord", "line", "phase"] as const;

export interface FeedTotal {
  readonly feed: string;
  readonly label: string;
  /** W, the sum over the feed's devices; null when a device's is not known. */
  readonly power: number | null;
  /** A, the sum over the feed's devices; null when a device's is not known. */
  readonly current: number | null;
  /** The devices on the feed that have a reading now. */
  readonly devices: number;
  /** Instances with a device on the feed and no current reading, in id order. */
  readonly unseen: readonly string[];
}

interface Sum {
  power: number | null;
  current: number | null;
}

/** The totals of every configured feed, in feed order. */
export function feedTotals(
  model: AssetModel,
  readings: ReadonlyMap<string, InstanceReading>,
): readonly FeedTotal[] {
  const sums = new Map<string, Sum & { devices: number; unseen: Set<string> }>();
  for (const feed of model.feeds.keys())
    sums.set(feed, { power: 0, current: 0, devices: 0, unseen: new Set() });
  for (const instance of instancesOnFeeds(model)) {
    const reading = readings.get(instance);
    const snapshot = reading?.snapshot ?? null;
    if (snapshot === null || reading?.online !== true) {
      for (const feed of feedsOf(model, instance)) {
        const s = sums.get(feed);
        if (s === undefined) continue;
        s.unseen.add(instance);
        s.power = null;
        s.current = null;
      }
      continue;
    }
    for (const device of snapshot.devices) {
      const s = sums.get(feedOf(model, instance, device.id) ?? "");
      if (s === undefined) continue;
      const own = deviceTotal(device);
      s.devices++;
      s.power = s.power === null || own.power === null ? null : s.power + own.power;
      s.current = s.current === null || own.current === null ? null : s.current + own.current;
    }
  }
  return [...sums].map(([feed, s]) =>
    Object.freeze({
      feed,
      label: model.feeds.get(feed)?.label ?? feed,
      power: s.power,
      current: s.current,
      devices: s.devices,
      unseen: Object.freeze([...s.unseen].sort()),
    }),
  );
}

/** Instances with a feed of their own or a device on one. */
function instancesOnFeeds(model: AssetModel): Set<string> {
  return new Set([...model.instanceFeeds.keys(), ...model.deviceFeeds.keys()]);
}

/** The feeds an instance's devices may be on (its own, and its devices'). */
function feedsOf(model: AssetModel, instance: string): Set<string> {
  const feeds = new Set(model.deviceFeeds.get(instance)?.values() ?? []);
  const own = model.instanceFeeds.get(instance);
  if (own !== undefined) feeds.add(own);
  return feeds;
}

/** A device's total power and current (see the file's comment). */
export function deviceTotal(device: Device): Sum {
  for (const kind of WHOLE_KINDS) {
    const entities = device.entities.filter((e) => entityKind(e.key) === kind);
    if (entities.length > 0) return sumOf(entities.map((e) => e.measurements));
  }
  return sumOf(device.outlets.map((o) => o.measurements));
}

function sumOf(lists: readonly (readonly Measurement[])[]): Sum {
  let power: number | null = 0;
  let current: number | null = 0;
  for (const list of lists) {
    const p = valueOf(list, "realPower", WATTS);
    const c = valueOf(list, "current", AMPS);
    power = power === null || p === null ? null : power + p;
    current = current === null || c === null ? null : current + c;
  }
  return { power, current };
}

const WATTS: Readonly<Record<string, number>> = { W: 1, "": 1, kW: 1000 };
const AMPS: Readonly<Record<string, number>> = { A: 1, "": 1, mA: 0.001 };

function valueOf(list: readonly Measurement[], type: string, scales: Readonly<Record<string, number>>) {
  const m = list.find((x) => x.type === type);
  const scale = m === undefined ? undefined : scales[m.units];
  return m === undefined || m.value === null || !Number.isFinite(m.value) || scale === undefined
    ? null
    : m.value * scale;
}
