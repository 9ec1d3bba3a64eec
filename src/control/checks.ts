/**
 * The control core's checks of a request, before anything is sent (docs/control.md, "The checks,
 * in order"): the action for the kind of target, the instance, `ActionsEnabled`, a snapshot to
 * check against, and `Protected`. Where the target is in that snapshot is ./targets.ts.
 */
import { findInstance } from "../config/instance-lookup.js";
import type { Config, InstanceConfig } from "../config/schema.js";
import type { OutletSettings, OutletTarget } from "../pdu/driver.js";
import { findGroup, findOutlet, type Snapshot } from "../pdu/model.js";
import type { SnapshotStore } from "../poller/store.js";
import { command, commandsFor, type CommandRow } from "./commands.js";
import { listSome, outletName, quote, refuse, type Refusal } from "./outcomes.js";
import { protectedSettingsProblem, SETTINGS_ACTION } from "./settings.js";
import type { ControlTarget, SettingsTarget } from "./types.js";

/**
 * 409 when the instance has `ActionsEnabled: false`, else null: the one place that rule is decided
 * (the MQTT surface asks it too, so a refused command never reaches a control service).
 */
export function actionsDisabled(instance: Pick<InstanceConfig, "id" | "ActionsEnabled">): Refusal | null {
  if (instance.ActionsEnabled) return null;
  const id = instance.id;
  return refuse(
    409,
    "Control disabled",
    `control of instance ${id} is disabled: set Pdus.${id}.ActionsEnabled: true (with the PDU's Credentials) to allow it`,
  );
}

/** The command's row when it is allowed on the target (and the outlet index is sound), else a 400. */
export function checkAction(target: ControlTarget, action: string): CommandRow | Refusal {
  const allowed = commandsFor(target.kind).map((c) => c.name);
  const row = command(action);
  if (row === undefined || !allowed.includes(action)) {
    const note =
      target.kind === "group" && row !== undefined && row.outlet !== null
        ? ` (${action} is outlet-only)`
        : "";
    return refuse(
      400,
      "Action not allowed",
      `action ${quote(action)} is not allowed for ${target.kind === "outlet" ? "an outlet" : "a group"}: use one of ${allowed.join(", ")}${note}`,
    );
  }
  return badIndex(target) ?? row;
}

/** 400 when an outlet target's index is not a 0-based integer, else null. */
export function badIndex(target: SettingsTarget): Refusal | null {
  if (target.kind !== "outlet" || (Number.isSafeInteger(target.index) && target.index >= 0)) return null;
  return refuse(
    400,
    "Bad outlet index",
    `outlet index must be a 0-based integer, got ${String(target.index)}`,
  );
}

/** An instance allowed to be written to, and its latest snapshot. */
export interface Polled {
  readonly id: string;
  readonly snapshot: Snapshot;
}

/**
 * The instance and its latest snapshot, or why a write to it is refused: 404 unknown instance,
 * 409 ActionsEnabled: false, 503 not polled yet (Retry-After: its PollInterval).
 */
export function polledInstance(config: Config, store: SnapshotStore, requested: string): Polled | Refusal {
  const instance = findInstance(config.instances, requested);
  if (instance === undefined) {
    const known = config.instances.map((i) => i.id);
    return refuse(
      404,
      "Unknown instance",
      `no PDU instance ${quote(requested)} is configured; configured instances: ${listSome(known)}`,
    );
  }
  const id = instance.id;
  const disabled = actionsDisabled(instance);
  if (disabled !== null) return disabled;
  const snapshot = store.get(id)?.snapshot ?? null;
  if (snapshot === null) {
    const retryAfter = Math.max(1, Math.ceil(instance.PollInterval));
    return refuse(
      503,
      "Not polled yet",
      `instance ${id} has not been polled successfully yet, so its outlets are not known; try again in ${retryAfter} s`,
      { retryAfter },
    );
  }
  return { id, snapshot };
}

/**
 * 409 when the command may not touch a protected outlet or group (`Protected: true` in the
 * instance's overrides, read from the snapshot the overrides seam made): a group action is refused
 * whole, naming every protected member. Null when nothing protected is involved.
 */
export function protectedRefusal(
  snapshot: Snapshot,
  resolved: ControlTarget,
  targets: readonly OutletTarget[],
  action: string,
  id: string,
): Refusal | null {
  const shielded = targets.filter((t) => findOutlet(snapshot, t.deviceId, t.index)?.protected === true);
  const names = shielded.map(outletName);
  const fix = `remove Protected from Pdus.${id}.Overrides to allow it; nothing was sent`;
  if (resolved.kind === "group") {
    const groupProtected = findGroup(snapshot, resolved.groupKey)?.protected === true;
    if (!groupProtected && names.length === 0) return null;
    const why = [
      ...(groupProtected ? [`group ${resolved.groupKey} is protected`] : []),
      ...(names.length > 0 ? [`it includes protected outlets ${listSome(names, 64)}`] : []),
    ].join(" and ");
    return refuse(
      409,
      "Protected",
      `${action} on group ${resolved.groupKey} of instance ${id} was refused for every outlet: ${why}; ${fix}`,
      { problem: "protected" },
    );
  }
  if (names.length === 0) return null;
  return refuse(
    409,
    "Protected",
    `${action} on outlet ${names[0]} of instance ${id} was refused: the outlet is protected; ${fix}`,
    { problem: "protected" },
  );
}

/**
 * 409 when a settings write would let a `Protected` outlet stay off (the settings table's
 * `whenProtected`: a power-on action of off, an on or reboot delay): the whole write, nothing sent.
 */
export function protectedSettingsRefusal(
  snapshot: Snapshot,
  outlet: OutletTarget,
  settings: OutletSettings,
  id: string,
): Refusal | null {
  if (findOutlet(snapshot, outlet.deviceId, outlet.index)?.protected !== true) return null;
  const problem = protectedSettingsProblem(settings);
  if (problem === null) return null;
  return refuse(
    409,
    "Protected",
    `${SETTINGS_ACTION} ${Object.keys(settings).join(", ")} on outlet ${outletName(outlet)} of instance ${id} was refused: ` +
      `the outlet is protected, which refuses ${problem}; a protected outlet takes a label, offDelay and poaAction on or last; ` +
      `remove Protected from Pdus.${id}.Overrides to allow it; nothing was sent`,
    { problem: "protected" },
  );
}
