/**
 * What changed between two configurations, and which of it a running service can take. The schema
 * says which keys apply live (`appliesLive: true`); every other changed key needs a restart.
 */
import { ConfigSchema, type Config } from "../schema.js";
import { asSchemaNode, type SchemaNode } from "../validate.js";

/** Changes that apply to the running service. */
export interface LiveChanges {
  /** The new `PollInterval` (seconds) of each instance whose interval changed, by instance id. */
  readonly pollIntervals: ReadonlyMap<string, number>;
  /** The new `Logging.Level`; undefined when it did not change. */
  readonly logLevel?: Config["Logging"]["Level"];
  /**
   * Instances whose `Overrides`, `Measurements` or `OutletCircuits` changed (re-derive their
   * snapshot, MQTT and discovery).
   */
  readonly overrides: ReadonlySet<string>;
  /**
   * Present when a key of assets and feeds changed (`Feeds`, `Assets`, `Sequences`, an instance's
   * `Feed`, `DeviceFeeds` or `OutletCircuits`): the assets' model is built again (docs/assets.md).
   */
  readonly assets?: true;
}

export interface ConfigDiff {
  /** Every changed key, dotted (`Pdus.rack-a.PollInterval`); `Pdus.<id>` for an added or removed instance. */
  readonly changed: readonly string[];
  /** The changed keys that need a restart; empty when everything applies live. */
  readonly restart: readonly string[];
  readonly live: LiveChanges;
}

/** The keys the schema marks `appliesLive`, dotted, with `<id>` for an instance id. */
export function liveKeys(schema: SchemaNode = asSchemaNode(ConfigSchema)): string[] {
  const keys: string[] = [];
  const visit = (node: SchemaNode, prefix: string) => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const path = prefix === "" ? key : `${prefix}.${key}`;
      if (child.appliesLive === true) keys.push(path);
      const item = Object.values(child.patternProperties ?? {})[0];
      if (item !== undefined) visit(item, `${path}.<id>`);
      else visit(child, path);
    }
  };
  visit(schema, "");
  return keys;
}

/** How each live key reaches {@link LiveChanges}; a test checks these are exactly the schema's live keys. */
export const LIVE_APPLIERS: Readonly<
  Record<string, (next: Config, id: string | undefined, into: MutableLiveChanges) => void>
> = {
  "Pdus.<id>.PollInterval": (next, id, into) => {
    const instance = next.instances.find((i) => i.id === id);
    if (instance !== undefined) into.pollIntervals.set(instance.id, instance.PollInterval);
  },
  "Pdus.<id>.Measurements": (_next, id, into) => {
    if (id !== undefined) into.overrides.add(id);
  },
  "Pdus.<id>.Overrides": (_next, id, into) => {
    if (id !== undefined) into.overrides.add(id);
  },
  "Logging.Level": (next, _id, into) => {
    into.logLevel = next.Logging.Level;
  },
  Feeds: assetsChanged,
  Assets: assetsChanged,
  Sequences: assetsChanged,
  "Pdus.<id>.Feed": assetsChanged,
  "Pdus.<id>.DeviceFeeds": assetsChanged,
  "Pdus.<id>.OutletCircuits": (next, id, into) => {
    // The circuits are applied in the instance's view of its snapshots, as its overrides are.
    if (id !== undefined) into.overrides.add(id);
    assetsChanged(next, id, into);
  },
};

function assetsChanged(_next: Config, _id: string | undefined, into: MutableLiveChanges): void {
  into.assets = true;
}

interface MutableLiveChanges {
  pollIntervals: Map<string, number>;
  overrides: Set<string>;
  logLevel?: Config["Logging"]["Level"];
  assets?: true;
}

/** The schema key of a changed path: the instance id replaced by `<id>`. */
const schemaKey = (path: readonly string[]) =>
  (path[0] === "Pdus" && path.length > 2 ? ["Pdus", "<id>", ...path.slice(2)] : path).join(".");

/** What changed from `prev` to `next`, and which of it the running service can apply. */
export function diffConfig(prev: Config, next: Config): ConfigDiff {
  const paths = changedPaths(prev, next);
  const live = new Set(liveKeys());
  const changes: MutableLiveChanges = { pollIntervals: new Map(), overrides: new Set() };
  const restart: string[] = [];
  for (const path of paths) {
    // A change inside a live key (an override's Name, an item of Measurements) is a change of that key.
    const full = schemaKey(path);
    const key = [...live].find((k) => full === k || full.startsWith(`${k}.`)) ?? full;
    const apply = live.has(key) ? LIVE_APPLIERS[key] : undefined;
    if (apply === undefined) restart.push(path.join("."));
    else apply(next, path[0] === "Pdus" ? path[1] : undefined, changes);
  }
  return {
    changed: paths.map((p) => p.join(".")),
    restart,
    live: {
      pollIntervals: changes.pollIntervals,
      overrides: changes.overrides,
      ...(changes.logLevel === undefined ? {} : { logLevel: changes.logLevel }),
      ...(changes.assets === undefined ? {} : { assets: changes.assets }),
    },
  };
}

/** Every changed key path: sections compared key by key, instances matched by id. */
function changedPaths(prev: Config, next: Config): string[][] {
  const paths: string[][] = [];
  const { instances: prevInstances, origin: _prevOrigin, ...prevSections } = prev;
  const { instances: nextInstances, origin: _nextOrigin, ...nextSections } = next;
  collectChanges(prevSections, nextSections, [], paths);

  const prevById = new Map(prevInstances.map((i) => [i.id, i]));
  const nextById = new Map(nextInstances.map((i) => [i.id, i]));
  for (const id of new Set([...prevById.keys(), ...nextById.keys()])) {
    const a = prevById.get(id);
    const b = nextById.get(id);
    if (a === undefined || b === undefined) {
      paths.push(["Pdus", id]);
      continue;
    }
    // Where the credentials came from is not a key: a change of theirs shows as Credentials.
    const { id: _a, primary: _ap, credentialSources: _as, ...aFields } = a;
    const { id: _b, primary: _bp, credentialSources: _bs, ...bFields } = b;
    collectChanges(aFields, bFields, ["Pdus", id], paths);
  }
  // Same instances in another order: the primary and the order of every listing change.
  const sameIds =
    prevInstances.length === nextInstances.length && prevInstances.every((i) => nextById.has(i.id));
  if (sameIds && prevInstances.some((i, n) => nextInstances[n]?.id !== i.id)) paths.push(["Pdus"]);
  return paths;
}

function collectChanges(a: unknown, b: unknown, path: string[], out: string[][]): void {
  if (Object.is(a, b)) return;
  const bothObjects = typeof a === "object" && a !== null && typeof b === "object" && b !== null;
  if (!bothObjects || Array.isArray(a) !== Array.isArray(b)) {
    out.push(path);
    return;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(left), ...Object.keys(right)])) {
    collectChanges(left[key], right[key], [...path, key], out);
  }
}
