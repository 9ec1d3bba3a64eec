/**
 * Routing to the target: a request's target found in the instance's latest snapshot, as the
 * outlets (or the label) to write, each with its device's route (a OneView member's outlet goes
 * through its proxy port), or a 400 (a name that is not safe, src/names.ts) or 404 naming what
 * is missing; and the key of the turn each write takes (./outlet-turns.ts).
 */
import type { LabelTarget, OutletTarget } from "../pdu/driver.js";
import { findDevice, findGroup, type Device, type DeviceCapability, type Snapshot } from "../pdu/model.js";
import { nameProblem } from "../names.js";
import { listSome, outletName, quote, refuse, type Refusal } from "./outcomes.js";
import type { ControlTarget, SettingsTarget } from "./types.js";

/** An outlet to write, with what its turn needs to know of it. */
export interface PlannedOutlet extends OutletTarget {
  /** The outlet's reboot delay as the PDU reports it (s), or null. */
  readonly rebootDelay: number | null;
}

/** What a command writes. `resolved` spells the target as the PDU does (a group key's case). */
export interface CommandPlan {
  readonly resolved: ControlTarget;
  readonly targets: readonly PlannedOutlet[];
}

/** A settings write's target as found in the latest snapshot, with its turn's key. */
export type SettingsPlan = { readonly resolved: SettingsTarget; readonly key: string } & (
  | { readonly kind: "outlet"; readonly outlet: OutletTarget }
  | { readonly kind: "label"; readonly label: LabelTarget }
);

/** An outlet's key in the turns: its commands and its settings writes take turns under it. */
export const outletKey = (instanceId: string, deviceId: string, index: number): string =>
  `${instanceId}\u0000${deviceId}\u0000${index}`;

const unsafeName = (what: string, name: string, problem: string, id: string): Refusal =>
  refuse(
    400,
    "Unsafe name",
    `${what} ${quote(name)} of instance ${id} ${problem}: names a PDU supplies are controlled only when they are safe, nothing was sent`,
    { problem: "unsafe-name" },
  );

const unknownDevice = (snapshot: Snapshot, deviceId: string, id: string): Refusal =>
  refuse(
    404,
    "Unknown device",
    `device ${quote(deviceId)} is not in the latest snapshot of instance ${id}; its devices: ${listSome(snapshot.devices.map((d) => d.id))}`,
  );

function unknownGroup(snapshot: Snapshot, groupKey: string, id: string): Refusal {
  const groups = snapshot.groups.map((g) => g.key);
  const known =
    groups.length === 0
      ? "it has no groups (groups exist only on a OneView cluster master)"
      : `its groups: ${listSome(groups)}`;
  return refuse(
    404,
    "Unknown group",
    `group ${quote(groupKey)} is not in the latest snapshot of instance ${id}; ${known}`,
  );
}

/** 409: the PDU itself reports `conf.outletControlEnabled: false` for these devices; nothing is sent. */
function controlDisabledOnPdu(deviceIds: readonly string[], id: string, groupKey?: string): Refusal {
  const which = deviceIds.length === 1 ? `device ${deviceIds[0]}` : `devices ${listSome([...deviceIds])}`;
  const scope = groupKey === undefined ? "" : `group ${groupKey} includes outlets of ${which}, and `;
  return refuse(
    409,
    "Control disabled on the PDU",
    `${scope}outlet control is disabled on the PDU itself: ${which} of instance ${id} reports conf.outletControlEnabled: false; enable outlet control in the PDU's own settings; nothing was sent`,
  );
}

/**
 * 409: the device cannot carry out the command at all (a metered unit without switching, a family
 * without a per-outlet energy reset): its model's reason, nothing is sent.
 */
function notSupported(device: Device, needs: DeviceCapability, id: string): Refusal {
  return refuse(
    409,
    "Not supported by the PDU",
    device.lacks?.[needs] ??
      `device ${device.id} of instance ${id} cannot carry out this command (${needs} is false); nothing was sent`,
  );
}

/**
 * The outlets a command writes, or why it cannot be sent (400, 404, 409). `needs`: the capability
 * the command needs of the device (its row's), checked before the outlet.
 */
export function planCommand(
  snapshot: Snapshot,
  target: ControlTarget,
  id: string,
  needs: DeviceCapability | null = null,
): CommandPlan | Refusal {
  return target.kind === "outlet"
    ? planOutlet(snapshot, target, id, needs)
    : planGroup(snapshot, target.groupKey, id);
}

function planOutlet(
  snapshot: Snapshot,
  target: Extract<ControlTarget, { kind: "outlet" }>,
  id: string,
  needs: DeviceCapability | null,
): CommandPlan | Refusal {
  const problem = nameProblem(target.deviceId);
  if (problem !== null) return unsafeName("device id", target.deviceId, problem, id);
  const device = findDevice(snapshot, target.deviceId);
  if (device === undefined) return unknownDevice(snapshot, target.deviceId, id);
  if (needs !== null && !device[needs]) return notSupported(device, needs, id);
  const found = device.outlets.find((o) => o.index === target.index);
  if (found === undefined) {
    const indexes = device.outlets.map((o) => o.index);
    const range = indexes.length === 0 ? "none" : `${indexes[0]}-${indexes[indexes.length - 1]}`;
    return refuse(
      404,
      "Unknown outlet",
      `device ${device.id} of instance ${id} has no outlet ${target.index} (indexes are 0-based; its outlets: ${range})`,
    );
  }
  if (!device.outletControlEnabled) return controlDisabledOnPdu([device.id], id);
  return {
    resolved: target,
    targets: [
      { deviceId: device.id, index: target.index, route: device.route, rebootDelay: found.rebootDelay },
    ],
  };
}

function planGroup(snapshot: Snapshot, groupKey: string, id: string): CommandPlan | Refusal {
  const keyProblem = nameProblem(groupKey);
  if (keyProblem !== null) return unsafeName("group key", groupKey, keyProblem, id);
  const group = findGroup(snapshot, groupKey);
  if (group === undefined) return unknownGroup(snapshot, groupKey, id);
  if (group.members.length === 0) {
    return refuse(
      404,
      "Empty group",
      `group ${group.key} of instance ${id} has no member outlets, so there is nothing to switch; assign outlets to it on the PDU`,
    );
  }
  if (nameProblem(group.key) !== null) {
    return unsafeName("group key", group.key, nameProblem(group.key) ?? "", id);
  }
  const targets: PlannedOutlet[] = [];
  for (const member of group.members) {
    const memberProblem = nameProblem(member.deviceId);
    if (memberProblem !== null) {
      return refuse(
        404,
        "Unknown outlet",
        `group ${group.key} of instance ${id} names an outlet of device ${quote(member.deviceId)}, whose id ${memberProblem}, so it cannot be controlled; nothing was sent`,
      );
    }
    const device = findDevice(snapshot, member.deviceId);
    const found = device?.outlets.find((o) => o.index === member.index);
    if (device === undefined || found === undefined) {
      return refuse(
        404,
        "Unknown outlet",
        `group ${group.key} of instance ${id} names outlet ${outletName(member)}, which is not in the latest snapshot; nothing was sent`,
      );
    }
    targets.push({
      deviceId: device.id,
      index: member.index,
      route: device.route,
      rebootDelay: found.rebootDelay,
    });
  }
  const disabled = [
    ...new Set(
      targets.flatMap((t) =>
        findDevice(snapshot, t.deviceId)?.outletControlEnabled === false ? [t.deviceId] : [],
      ),
    ),
  ];
  if (disabled.length > 0) return controlDisabledOnPdu(disabled, id, group.key);
  return { resolved: { kind: "group", groupKey: group.key }, targets };
}

/** The settings write's target in the latest snapshot, or a 400 (unsafe name) or 404. */
export function planSettings(snapshot: Snapshot, target: SettingsTarget, id: string): SettingsPlan | Refusal {
  if (target.kind === "group") {
    const problem = nameProblem(target.groupKey);
    if (problem !== null) return unsafeName("group key", target.groupKey, problem, id);
    const group = findGroup(snapshot, target.groupKey);
    if (group === undefined) return unknownGroup(snapshot, target.groupKey, id);
    return {
      kind: "label",
      resolved: { kind: "group", groupKey: group.key },
      key: `${id}\u0000group\u0000${group.key.toLowerCase()}`,
      label: { kind: "group", groupKey: group.key },
    };
  }
  const problem = nameProblem(target.deviceId);
  if (problem !== null) return unsafeName("device id", target.deviceId, problem, id);
  const device = findDevice(snapshot, target.deviceId);
  if (device === undefined) return unknownDevice(snapshot, target.deviceId, id);
  const route = device.route;
  switch (target.kind) {
    case "device":
      return {
        kind: "label",
        resolved: target,
        key: `${id}\u0000device\u0000${device.id}`,
        label: { kind: "device", deviceId: device.id, route },
      };
    case "entity": {
      const keyProblem = nameProblem(target.entityKey);
      if (keyProblem !== null) return unsafeName("entity key", target.entityKey, keyProblem, id);
      const entity = device.entities.find((e) => e.key === target.entityKey);
      if (entity === undefined) {
        return refuse(
          404,
          "Unknown entity",
          `device ${device.id} of instance ${id} has no entity ${quote(target.entityKey)}; its entities: ${listSome(device.entities.map((e) => e.key))}`,
        );
      }
      return {
        kind: "label",
        resolved: target,
        key: `${id}\u0000entity\u0000${device.id}\u0000${entity.key}`,
        label: { kind: "entity", deviceId: device.id, entityKey: entity.key, route },
      };
    }
    case "outlet": {
      if (!device.outlets.some((o) => o.index === target.index)) {
        return refuse(
          404,
          "Unknown outlet",
          `device ${device.id} of instance ${id} has no outlet ${target.index} (indexes are 0-based)`,
        );
      }
      return {
        kind: "outlet",
        resolved: target,
        // The key of the outlet's commands: settings and switching of one outlet take turns.
        key: outletKey(id, device.id, target.index),
        outlet: { deviceId: device.id, index: target.index, route },
      };
    }
  }
}
