/**
 * The command table: every command the service accepts, one row each, and everything each surface
 * needs to know of it. Topic parsing and building (src/mqtt/topics.ts), the MQTT handler
 * (src/mqtt/commands.ts), the REST routes and their OpenAPI schemas (src/http/api/), the control
 * core (./service.ts and its parts, the outlet's turns in ./outlet-turns.ts among them) and Home
 * Assistant discovery (src/mqtt/discovery.ts) all read it, so adding a command is a row here, the
 * driver call it makes, and a test (docs/architecture.md, "Adding a command").
 */
import type { OutletTarget, PduDriver } from "../pdu/driver.js";
import type { Device, DeviceCapability } from "../pdu/model.js";

/** What a command's driver call gets: the driver's writes. */
export type CommandDriver = Pick<
  PduDriver,
  "controlOutlet" | "resetOutletEnergy" | "setOutletSettings" | "setLabel"
>;

/** How a command arrives over MQTT: the last topic level, and the payload it needs (null: any). */
export interface MqttForm {
  readonly level: string;
  /** Compared ignoring case and surrounding blanks; null: any payload (the level alone says it). */
  readonly payload: string | null;
}

/**
 * The command's Home Assistant entity: the outlet's power `switch` (its `on` and `off` rows give
 * payload_on and payload_off), or a `button` pressing the command's name.
 */
export type HomeAssistantEntity =
  | { readonly entity: "switch" }
  | {
      readonly entity: "button";
      /** Last part of the entity's object id. */
      readonly objectId: string;
      readonly name: string;
      /** Extra discovery fields (device_class, entity_category). */
      readonly fields?: Readonly<Record<string, string>>;
    };

/** How the web console shows the command (its button, the confirmation, the progress). */
export interface ConsoleForm {
  /** The button's text. */
  readonly label: string;
  /** The confirmation's verb: "Switch off" outlet 3? */
  readonly verb: string;
  /** What the target shows while it runs. */
  readonly progress: string;
  /** What it shows once the service answered; null: until the PDU reports the state it latches. */
  readonly done: string | null;
  /** How the button looks: on, off, a restart (power-cycles), a reset of statistics (no power change). */
  readonly tone: "on" | "off" | "restart" | "reset";
}

/** The command on one kind of target. */
export interface CommandForm {
  readonly mqtt: MqttForm;
  readonly homeAssistant: HomeAssistantEntity;
  readonly console: ConsoleForm;
}

export interface CommandRow {
  /** The command's name: the REST body's `action`, the audit log's action, a button's payload. */
  readonly name: string;
  /** On one outlet; null: not for outlets. */
  readonly outlet: CommandForm | null;
  /** On every member outlet of a group; null: not for groups. */
  readonly group: CommandForm | null;
  /**
   * Sending it twice does no harm: a timed-out one may simply be sent again. Otherwise it is never
   * repeated (sent once, over a fresh connection).
   */
  readonly idempotent: boolean;
  /**
   * In the outlet's turns (./outlet-turns.ts): it takes the place of a command already waiting for
   * the outlet, which ends `superseded` unsent, so the last state asked for is the one written.
   * Otherwise it is refused (`busy`) while another command waits.
   */
  readonly supersedesWaiting: boolean;
  /**
   * In the outlet's turns: refused (`busy`) while a command with this rule runs or waits for the
   * outlet, or was sent less than the outlet's reboot delay ago, so a flood of them reaches the PDU
   * as one.
   */
  readonly oncePerRebootDelay: boolean;
  /**
   * It switches the outlet's relay (on, off, a reboot's off and on): in the outlet's turns it is
   * refused (`relay`) less than the instance's `RelayProtection` after the last such command sent to
   * the outlet, whatever surface either came by, so no flood can cycle the relay faster.
   */
  readonly switchesRelay: boolean;
  /** The outlet state shown at once after it succeeded (until a poll agrees), or null. */
  readonly latches: "on" | "off" | null;
  /** Refused (409, nothing sent) for a `Protected` outlet or group, or a group with a protected outlet. */
  readonly refusedWhenProtected: boolean;
  /**
   * What the outlet's device must be able to do (a {@link DeviceCapability} of the model) for the
   * command to be offered: where it cannot, Home Assistant discovery announces no entity for it and
   * the console shows no button, and the driver refuses it (409, nothing sent). null: every device.
   */
  readonly needs: DeviceCapability | null;
  /** The driver call for one outlet. */
  readonly call: (driver: CommandDriver, target: OutletTarget, signal: AbortSignal) => Promise<void>;
}

const powerSwitch: HomeAssistantEntity = { entity: "switch" };
const SET = (payload: string): MqttForm => ({ level: "set", payload });

export const COMMANDS = [
  {
    name: "on",
    outlet: {
      mqtt: SET("on"),
      homeAssistant: powerSwitch,
      console: { label: "On", verb: "Switch on", progress: "Switching on…", done: null, tone: "on" },
    },
    group: {
      mqtt: SET("on"),
      homeAssistant: { entity: "button", objectId: "on", name: "All outlets on" },
      console: { label: "All on", verb: "Switch on", progress: "Switching on…", done: null, tone: "on" },
    },
    idempotent: true,
    supersedesWaiting: true,
    oncePerRebootDelay: false,
    switchesRelay: true,
    latches: "on",
    refusedWhenProtected: false,
    needs: "canSwitchOutlets",
    call: (driver, target, signal) => driver.controlOutlet(target, "on", signal),
  },
  {
    name: "off",
    outlet: {
      mqtt: SET("off"),
      homeAssistant: powerSwitch,
      console: { label: "Off", verb: "Switch off", progress: "Switching off…", done: null, tone: "off" },
    },
    group: {
      mqtt: SET("off"),
      homeAssistant: { entity: "button", objectId: "off", name: "All outlets off" },
      console: { label: "All off", verb: "Switch off", progress: "Switching off…", done: null, tone: "off" },
    },
    idempotent: true,
    supersedesWaiting: true,
    oncePerRebootDelay: false,
    switchesRelay: true,
    latches: "off",
    refusedWhenProtected: true,
    needs: "canSwitchOutlets",
    call: (driver, target, signal) => driver.controlOutlet(target, "off", signal),
  },
  {
    name: "reboot",
    outlet: {
      mqtt: { level: "reboot", payload: null },
      homeAssistant: {
        entity: "button",
        objectId: "reboot",
        name: "Reboot",
        fields: { device_class: "restart" },
      },
      console: {
        label: "Reboot",
        verb: "Reboot (power-cycle)",
        progress: "Rebooting…",
        done: "Rebooted.",
        tone: "restart",
      },
    },
    group: {
      mqtt: SET("reboot"),
      homeAssistant: {
        entity: "button",
        objectId: "reboot",
        name: "Reboot all outlets",
        fields: { device_class: "restart" },
      },
      console: {
        label: "Reboot all",
        verb: "Reboot (power-cycle)",
        progress: "Rebooting…",
        done: "Rebooted.",
        tone: "restart",
      },
    },
    idempotent: false,
    supersedesWaiting: false,
    oncePerRebootDelay: true,
    switchesRelay: true,
    latches: null,
    refusedWhenProtected: true,
    needs: "canSwitchOutlets",
    call: (driver, target, signal) => driver.controlOutlet(target, "reboot", signal),
  },
  {
    name: "resetStats",
    outlet: {
      mqtt: { level: "resetStats", payload: null },
      homeAssistant: {
        entity: "button",
        objectId: "reset-stats",
        name: "Reset statistics",
        fields: { entity_category: "config" },
      },
      console: {
        label: "Reset energy",
        verb: "Reset the energy statistics of",
        progress: "Resetting statistics…",
        done: "Energy statistics reset.",
        tone: "reset",
      },
    },
    group: null,
    idempotent: false,
    supersedesWaiting: false,
    oncePerRebootDelay: false,
    switchesRelay: false,
    latches: null,
    refusedWhenProtected: false,
    needs: "canResetOutletEnergy",
    call: (driver, target, signal) => driver.resetOutletEnergy(target, signal),
  },
] as const satisfies readonly CommandRow[];

export type CommandName = (typeof COMMANDS)[number]["name"];
export type TargetKind = "outlet" | "group";

const byName: ReadonlyMap<string, CommandRow> = new Map(COMMANDS.map((c) => [c.name, c]));

/** The row of a command name (exact, case-sensitive), if there is one. */
export function command(name: string): CommandRow | undefined {
  return byName.get(name);
}

/** The commands allowed on a kind of target, in table order. */
export function commandsFor(kind: TargetKind): readonly CommandRow[] {
  return kind === "outlet" ? OUTLET_ROWS : GROUP_ROWS;
}

const OUTLET_ROWS: readonly CommandRow[] = COMMANDS.filter((c) => c.outlet !== null);
const GROUP_ROWS: readonly CommandRow[] = COMMANDS.filter((c: CommandRow) => c.group !== null);

/** Every command name, in table order (the REST schemas' enums keep this order). */
export const COMMAND_NAMES: readonly string[] = COMMANDS.map((c) => c.name);
export const OUTLET_ACTIONS: readonly string[] = OUTLET_ROWS.map((c) => c.name);
export const GROUP_ACTIONS: readonly string[] = GROUP_ROWS.map((c) => c.name);

/** Distinct MQTT command levels of a kind of target, in table order. */
export function mqttLevels(kind: TargetKind): readonly string[] {
  return [...new Set(commandsFor(kind).map((c) => formOf(c, kind)!.mqtt.level))];
}

/** Whether the command is offered on an outlet of the device: it needs nothing the device cannot do. */
export function offeredOn(row: Pick<CommandRow, "needs">, device: Pick<Device, DeviceCapability>): boolean {
  return row.needs === null || device[row.needs];
}

export function formOf(row: CommandRow, kind: TargetKind): CommandForm | null {
  return kind === "outlet" ? row.outlet : row.group;
}

/**
 * The command an MQTT message asks for on a kind of target: its level and payload, or null when the
 * payload is not one the level accepts (a level no command has is null too).
 */
export function commandFromMqtt(kind: TargetKind, level: string, payload: string): CommandRow | null {
  const value = payload.trim().toLowerCase();
  for (const row of commandsFor(kind)) {
    const mqtt = formOf(row, kind)!.mqtt;
    if (mqtt.level === level && (mqtt.payload === null || mqtt.payload === value)) return row;
  }
  return null;
}

/** The payloads a level accepts for a kind of target, for messages: `on or off`, `on, off or reboot`. */
export function acceptedPayloads(kind: TargetKind, level: string): string {
  const payloads = commandsFor(kind).flatMap((row) => {
    const mqtt = formOf(row, kind)!.mqtt;
    return mqtt.level === level && mqtt.payload !== null ? [mqtt.payload] : [];
  });
  if (payloads.length <= 1) return payloads.join("");
  return `${payloads.slice(0, -1).join(", ")} or ${payloads.at(-1)}`;
}
