/**
 * The domain model of assets, feeds and sequences from the configuration's keys (./assets.ts), and every rule about
 * them that the configuration alone decides, each naming its key (the loader turns them into exit
 * 2, which the Kubernetes source's refused change is too). What needs a poll (an outlet the
 * instance does not have, a cord that is not unique) is the resolution's (src/assets/state.ts),
 * shown on the asset and logged once.
 */
import { displaySpoofing } from "../display.js";
import { nameProblem } from "../names.js";
import { parseCircuits } from "./outlet-circuits.js";
import type { Config } from "./schema.js";
import {
  ASSET_ID_PATTERN,
  DEFAULT_GAP_SECONDS,
  DEFAULT_MAX_CONCURRENT_STARTS,
  DEFAULT_PRIORITY,
  DEFAULT_START_SECONDS,
  MAX_CORDS,
  type AssetConfig,
  type AssetDef,
  assetsSectionOf,
  type AssetModel,
  type AssetsSection,
  type CircuitRange,
  type Cord,
  type FeedDef,
} from "./assets.js";

/**
 * A rule the configuration breaks: where (the key's path, a list item by its 0-based position, as
 * the loader names keys), the key dotted (`Assets.db-01.Cords.0.Instance`) and why.
 */
export interface ModelProblem {
  readonly path: readonly string[];
  readonly key: string;
  readonly problem: string;
}

/** A problem at `path`. */
const at = (path: readonly string[], problem: string): ModelProblem => ({
  path,
  key: path.join("."),
  problem,
});

/** The problems of the configuration's assets, feeds and sequences (the loader's rules, exit 2 naming each key). */
export function assetProblems(config: Config): readonly ModelProblem[] {
  return buildAssetModel(assetsSectionOf(config)).problems;
}

/** Longest start-up time an asset may name (s): a sequence waits this long per wave at most. */
export const MAX_START_SECONDS = 3600;
/** Longest gap between waves (s). */
export const MAX_GAP_SECONDS = 3600;

const idProblem = (id: string): string | null =>
  ASSET_ID_PATTERN.test(id) ? null : "must be 1-64 characters of A-Za-z0-9_-";

/** The model, and every problem found (the model leaves out what a problem is about). */
export function buildAssetModel(section: AssetsSection): {
  readonly model: AssetModel;
  readonly problems: readonly ModelProblem[];
} {
  const problems: ModelProblem[] = [];
  const feeds = buildFeeds(section, problems);
  const { instanceFeeds, deviceFeeds, circuits } = buildInstances(section, feeds, problems);
  const assets = buildAssets(section, problems);
  const sequences = buildSequences(section, problems);
  return { model: { assets, feeds, instanceFeeds, deviceFeeds, circuits, sequences }, problems };
}

function buildFeeds(section: AssetsSection, problems: ModelProblem[]): ReadonlyMap<string, FeedDef> {
  const feeds = new Map<string, FeedDef>();
  for (const id of Object.keys(section.Feeds ?? {}).sort()) {
    const problem = idProblem(id);
    const label = section.Feeds?.[id]?.Label;
    if (problem !== null) problems.push(at(["Feeds", id], problem));
    else {
      labelOk(["Feeds", id, "Label"], label, problems);
      feeds.set(id, { id, label: label ?? id });
    }
  }
  return feeds;
}

/**
 * A `Label` becomes a Home Assistant device name and a payload: a safe name that does not change
 * how text is displayed, as an override's `Name` (src/config/overrides.ts). False when it is not.
 */
function labelOk(path: readonly string[], label: string | undefined, problems: ModelProblem[]): boolean {
  if (label === undefined) return true;
  const problem = nameProblem(label) ?? displaySpoofing(label);
  if (problem === null) return true;
  problems.push(at(path, `${problem}: a Label must be a safe name`));
  return false;
}

function buildInstances(
  section: AssetsSection,
  feeds: ReadonlyMap<string, FeedDef>,
  problems: ModelProblem[],
): Pick<AssetModel, "instanceFeeds" | "deviceFeeds" | "circuits"> {
  const instanceFeeds = new Map<string, string>();
  const deviceFeeds = new Map<string, ReadonlyMap<string, string>>();
  const circuits = new Map<string, readonly CircuitRange[]>();
  const knownFeed = (path: readonly string[], feed: string): boolean => {
    if (feeds.has(feed)) return true;
    const known = feeds.size === 0 ? "no Feeds are configured" : `Feeds has ${[...feeds.keys()].join(", ")}`;
    problems.push(at(path, `names feed ${feed}, which is not configured (${known})`));
    return false;
  };
  for (const [id, pdu] of Object.entries(section.Pdus)) {
    if (pdu.Feed !== undefined && knownFeed(["Pdus", id, "Feed"], pdu.Feed)) instanceFeeds.set(id, pdu.Feed);
    const devices = new Map<string, string>();
    for (const [device, feed] of Object.entries(pdu.DeviceFeeds ?? {})) {
      const path = ["Pdus", id, "DeviceFeeds", device];
      const problem = nameProblem(device);
      if (problem !== null) problems.push(at(path, `is a device id that ${problem}`));
      else if (knownFeed(path, feed)) devices.set(device, feed);
    }
    if (devices.size > 0) deviceFeeds.set(id, devices);
    if (pdu.OutletCircuits !== undefined) {
      const parsed = parseCircuits(pdu.OutletCircuits);
      for (const p of parsed.problems) problems.push(at(["Pdus", id, "OutletCircuits", p.key], p.problem));
      if (parsed.ranges.length > 0) circuits.set(id, parsed.ranges);
    }
  }
  return { instanceFeeds, deviceFeeds, circuits };
}

function buildAssets(section: AssetsSection, problems: ModelProblem[]): ReadonlyMap<string, AssetDef> {
  const assets = new Map<string, AssetDef>();
  /** `instance \0 device \0 outlet` → the key of the cord that named it first. */
  const outlets = new Map<string, string>();
  for (const id of Object.keys(section.Assets ?? {}).sort()) {
    const config = section.Assets?.[id];
    if (config === undefined) continue;
    const before = problems.length;
    const problem = idProblem(id);
    if (problem !== null) problems.push(at(["Assets", id], problem));
    const cords = assetCords(section, id, config, outlets, problems);
    assetFieldProblems(["Assets", id], config, problems);
    if (problems.length > before) continue;
    assets.set(id, {
      id,
      label: config.Label ?? id,
      cords,
      protected: config.Protected ?? false,
      priority: config.Priority ?? DEFAULT_PRIORITY,
      tenant: config.Tenant ?? null,
      tags: Object.freeze([...new Set(config.Tags ?? [])]),
      startSeconds: config.StartSeconds ?? DEFAULT_START_SECONDS,
    });
  }
  return assets;
}

function assetCords(
  section: AssetsSection,
  id: string,
  config: AssetConfig,
  outlets: Map<string, string>,
  problems: ModelProblem[],
): readonly Cord[] {
  const base = ["Assets", id, "Cords"];
  if (config.Cords.length < 1 || config.Cords.length > MAX_CORDS)
    problems.push(at(base, `must list 1 to ${MAX_CORDS} cords (got ${config.Cords.length})`));
  const cords: Cord[] = [];
  config.Cords.forEach((c, i) => {
    const where = [...base, String(i)];
    if (!Object.hasOwn(section.Pdus, c.Instance))
      problems.push(at([...where, "Instance"], `names instance ${c.Instance}, which is not in Pdus`));
    else if (c.Device !== undefined && nameProblem(c.Device) !== null)
      problems.push(at([...where, "Device"], `is a device id that ${nameProblem(c.Device) ?? ""}`));
    else if (!Number.isSafeInteger(c.Outlet) || c.Outlet < 0)
      problems.push(at([...where, "Outlet"], "must be a 0-based outlet index"));
    else {
      const outlet = `${c.Instance}\u0000${c.Device ?? ""}\u0000${c.Outlet}`;
      const first = outlets.get(outlet);
      if (first !== undefined)
        problems.push(at(where, `is the same outlet as ${first}: an outlet feeds one asset`));
      else outlets.set(outlet, where.join("."));
      cords.push(Object.freeze({ instance: c.Instance, device: c.Device ?? null, outlet: c.Outlet }));
    }
  });
  return Object.freeze(cords);
}

function assetFieldProblems(path: readonly string[], config: AssetConfig, problems: ModelProblem[]): void {
  labelOk([...path, "Label"], config.Label, problems);
  if (config.Priority !== undefined && (!Number.isSafeInteger(config.Priority) || config.Priority < 0))
    problems.push(at([...path, "Priority"], "must be a whole number from 0"));
  const start = config.StartSeconds;
  if (start !== undefined && !(Number.isFinite(start) && start >= 0 && start <= MAX_START_SECONDS))
    problems.push(at([...path, "StartSeconds"], `must be 0 to ${MAX_START_SECONDS} seconds`));
  if (config.Tenant !== undefined && idProblem(config.Tenant) !== null)
    problems.push(at([...path, "Tenant"], idProblem(config.Tenant) ?? ""));
  (config.Tags ?? []).forEach((tag, i) => {
    const problem = idProblem(tag);
    if (problem !== null) problems.push(at([...path, "Tags", String(i)], problem));
  });
}

function buildSequences(section: AssetsSection, problems: ModelProblem[]): AssetModel["sequences"] {
  const max = section.Sequences?.MaxConcurrentStarts ?? DEFAULT_MAX_CONCURRENT_STARTS;
  const gap = section.Sequences?.GapSeconds ?? DEFAULT_GAP_SECONDS;
  const maxOk = Number.isSafeInteger(max) && max >= 1 && max <= 1000;
  const gapOk = Number.isFinite(gap) && gap >= 0 && gap <= MAX_GAP_SECONDS;
  if (!maxOk)
    problems.push(at(["Sequences", "MaxConcurrentStarts"], "must be a whole number from 1 to 1000"));
  if (!gapOk) problems.push(at(["Sequences", "GapSeconds"], `must be 0 to ${MAX_GAP_SECONDS} seconds`));
  return {
    maxConcurrentStarts: maxOk ? max : DEFAULT_MAX_CONCURRENT_STARTS,
    gapSeconds: gapOk ? gap : DEFAULT_GAP_SECONDS,
  };
}
