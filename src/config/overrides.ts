/**
 * What the configuration says of an instance's overrides (docs/control.md) without a snapshot: the
 * rules the schema cannot judge (the loader's, exit 2 naming the key), the notes `check-config`
 * prints, and whether anything is configured at all. src/pdu/overrides.ts applies them to snapshots.
 */
import { displaySpoofing } from "../display.js";
import { nameProblem, quoteName } from "../names.js";
import { OverrideIndexPattern, type InstanceConfig } from "./schema.js";

/** What the overrides read of an instance's configuration. */
export type InstanceOverrides = Pick<InstanceConfig, "id" | "Overrides" | "Measurements">;

/** One outlet's, entity's or group's override. */
export interface ThingOverride {
  readonly Name?: string;
  readonly Hidden?: boolean;
  readonly Protected?: boolean;
}

const INDEX = new RegExp(OverrideIndexPattern);

/** Whether the instance configures anything that changes a snapshot. */
export function hasOverrides(instance: InstanceOverrides): boolean {
  const { Outlets, Entities, Groups } = instance.Overrides;
  return (
    instance.Measurements !== undefined ||
    Object.keys(Outlets).length > 0 ||
    Object.keys(Entities).length > 0 ||
    Object.keys(Groups).length > 0
  );
}

/** A problem with one override key, for a configuration error (path below `Pdus.<id>`). */
export interface OverrideProblem {
  readonly path: readonly string[];
  readonly problem: string;
}

/**
 * Keys and names the schema cannot judge: device ids, entity and group keys, and every `Name`, must
 * be safe names (src/names.ts), and a `Name` must not change how text is displayed
 * (src/display.ts). Every problem, in the order of the overrides; nothing below a bad device id.
 */
export function overrideProblems(instance: InstanceOverrides): OverrideProblem[] {
  const base = ["Pdus", instance.id, "Overrides"];
  const key = (path: string[], k: string, what: string): OverrideProblem | undefined => {
    const problem = nameProblem(k);
    return problem === null
      ? undefined
      : { path: [...base, ...path, k], problem: `the ${what} ${quoteName(k)} ${problem}` };
  };
  const name = (path: string[], o: ThingOverride): OverrideProblem | undefined => {
    if (o.Name === undefined) return undefined;
    const problem = nameProblem(o.Name);
    if (problem !== null)
      return { path: [...base, ...path, "Name"], problem: `${problem}: a Name must be a safe name` };
    const spoofing = displaySpoofing(o.Name);
    return spoofing === null
      ? undefined
      : {
          path: [...base, ...path, "Name"],
          problem: `contains ${spoofing}: a Name must not change how text is displayed`,
        };
  };
  const found: (OverrideProblem | undefined)[] = [];
  const { Outlets, Entities, Groups } = instance.Overrides;
  for (const [deviceId, outlets] of Object.entries(Outlets)) {
    const bad = key(["Outlets"], deviceId, "device id");
    found.push(bad);
    if (bad) continue;
    for (const [index, o] of Object.entries(outlets)) {
      found.push(
        INDEX.test(index)
          ? name(["Outlets", deviceId, index], o)
          : {
              path: [...base, "Outlets", deviceId, index],
              problem: `outlet indexes are the PDU's 0-based keys written as text ("0", "7"), got ${quoteName(index)}`,
            },
      );
    }
  }
  for (const [deviceId, entities] of Object.entries(Entities)) {
    const bad = key(["Entities"], deviceId, "device id");
    found.push(bad);
    if (bad) continue;
    for (const [entityKey, e] of Object.entries(entities)) {
      found.push(
        key(["Entities", deviceId], entityKey, "entity key") ?? name(["Entities", deviceId, entityKey], e),
      );
    }
  }
  for (const [groupKey, g] of Object.entries(Groups)) {
    found.push(key(["Groups"], groupKey, "group key") ?? name(["Groups", groupKey], g));
  }
  return found.filter((p): p is OverrideProblem => p !== undefined);
}

/**
 * What `check-config` can say about overrides without contacting a PDU: settings that have no
 * effect as written. Whether the ids exist is only known after a poll (warned at start).
 */
export function overrideNotes(
  instance: InstanceOverrides & Pick<InstanceConfig, "ActionsEnabled">,
): string[] {
  const at = `Pdus.${instance.id}.Overrides`;
  const out: string[] = [];
  const check = (path: string, o: ThingOverride) => {
    if (o.Protected === true && !instance.ActionsEnabled) {
      out.push(
        `${path}.Protected: has no effect while Pdus.${instance.id}.ActionsEnabled is false (all control is refused)`,
      );
    }
    if (o.Hidden === true && o.Name !== undefined) {
      out.push(`${path}.Name: not shown anywhere but REST, since the same override has Hidden: true`);
    }
    if (o.Name === undefined && o.Hidden === undefined && o.Protected === undefined) {
      out.push(`${path}: empty override (no Name, Hidden or Protected)`);
    }
  };
  const { Outlets, Entities, Groups } = instance.Overrides;
  for (const [d, outlets] of Object.entries(Outlets)) {
    for (const [i, o] of Object.entries(outlets)) check(`${at}.Outlets.${d}.${i}`, o);
  }
  for (const [d, entities] of Object.entries(Entities)) {
    for (const [k, e] of Object.entries(entities)) check(`${at}.Entities.${d}.${k}`, e);
  }
  for (const [k, g] of Object.entries(Groups)) check(`${at}.Groups.${k}`, g);
  return out;
}
