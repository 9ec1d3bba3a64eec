/**
 * The settings table (docs/control.md, "Settings writes"): every setting an operator may write, one
 * row each, with its one validation rule. The REST body schemas (src/http/api/settings.ts), the MQTT
 * `…/outlets/<i>/<setting>/set` topics and their payload parsing (src/mqtt/topics.ts,
 * src/mqtt/commands.ts), the retained `…/outlets/<i>/<setting>` topics (src/mqtt/publisher.ts),
 * Home Assistant's `number`/`select`/`text` entities (src/mqtt/discovery.ts) and the control core
 * (./settings-writes.ts) all read it, so a rule is written here only.
 *
 * Values are never converted: a delay is a JSON integer (`"10"`, `10.5` and `true` are refused); over
 * MQTT the payload is text, so a delay must be plain decimal digits there (`10`, never `+10`, `1e1`,
 * `10.0` or `010`).
 */
import type { OutletSettings, PoaAction } from "../pdu/driver.js";
import type { Outlet } from "../pdu/model.js";
import { displayTextProblem } from "../display.js";
import type { TurnRules } from "./outlet-turns.js";

/** The audit log's (and the control metrics') action of a settings write. */
export const SETTINGS_ACTION = "set";

/**
 * How a settings write takes part in the outlet's turns (./outlet-turns.ts), which an outlet's
 * commands take too: it waits behind a running write, never takes a waiting one's place, sets off
 * no reboot delay and switches no relay.
 */
export const SETTINGS_TURN: TurnRules = {
  name: SETTINGS_ACTION,
  supersedesWaiting: false,
  oncePerRebootDelay: false,
  switchesRelay: false,
};

/** Longest label, in characters (code points). */
export const LABEL_MAX = 32;
/** Longest delay, in seconds. */
export const DELAY_MAX = 3600;
/** The power-on actions, in the order Home Assistant lists them. */
export const POA_ACTIONS: readonly PoaAction[] = ["on", "off", "last"];

export type SettingName = keyof OutletSettings;
export type SettingKind = "label" | "delay" | "poaAction";

export interface SettingRow {
  /** The REST body's field, the MQTT topic level, the PDU's `set` field. */
  readonly name: SettingName;
  readonly kind: SettingKind;
  /** The Home Assistant entity's name. */
  readonly title: string;
  /** What it is, for the OpenAPI document. */
  readonly description: string;
  /** The value the latest snapshot reports for an outlet, as the retained topic's payload; null: none. */
  readonly current: (outlet: Outlet) => string | null;
  /**
   * On a `Protected` outlet (overrides): the values refused (`"all"`: any value) and why; null: the
   * setting is allowed. Protected means the bridge never leaves the outlet off, so what can only
   * keep it off is refused, and what cannot (a label, an off delay, which only postpones an off the
   * bridge refuses anyway) is allowed.
   */
  readonly whenProtected: { readonly refuses: "all" | readonly string[]; readonly why: string } | null;
}

const delayOf = (n: number | null): string | null => (n === null ? null : String(n));

/** Table order is the REST schema's property order and the discovery order. */
export const OUTLET_SETTINGS: readonly SettingRow[] = [
  // The label topic existed before settings did: it carries the display name (label, else name).
  {
    name: "label",
    kind: "label",
    title: "Label",
    description: `The label on the PDU: 1 to ${LABEL_MAX} printable characters`,
    current: (o) => o.displayName,
    whenProtected: null,
  },
  {
    name: "onDelay",
    kind: "delay",
    title: "On delay",
    description: `Seconds the outlet waits before switching on (0 to ${DELAY_MAX})`,
    current: (o) => delayOf(o.onDelay),
    whenProtected: { refuses: "all", why: "it holds the outlet off before each switch on" },
  },
  {
    name: "offDelay",
    kind: "delay",
    title: "Off delay",
    description: `Seconds the outlet waits before switching off (0 to ${DELAY_MAX})`,
    current: (o) => delayOf(o.offDelay),
    whenProtected: null,
  },
  {
    name: "rebootDelay",
    kind: "delay",
    title: "Reboot delay",
    description: `Seconds the outlet stays off when rebooted (0 to ${DELAY_MAX})`,
    current: (o) => delayOf(o.rebootDelay),
    whenProtected: { refuses: "all", why: "it sets how long the outlet stays off in a reboot" },
  },
  {
    name: "poaAction",
    kind: "poaAction",
    title: "Power-on action",
    description: "What the outlet does when the PDU powers up: on, off, or its last state",
    current: (o) => (o.poaAction !== null && isPoaAction(o.poaAction) ? o.poaAction : null),
    whenProtected: { refuses: ["off"], why: "the outlet would stay off after every power restore" },
  },
];

export const SETTING_NAMES: readonly SettingName[] = OUTLET_SETTINGS.map((s) => s.name);

/** The settings published as their own retained topics by this table (the label topic is older). */
export const PUBLISHED_SETTINGS: readonly SettingRow[] = OUTLET_SETTINGS.filter((s) => s.kind !== "label");

const byName: ReadonlyMap<string, SettingRow> = new Map(OUTLET_SETTINGS.map((s) => [s.name, s]));

/** The row of a setting name (exact, case-sensitive), if there is one. */
export function setting(name: string): SettingRow | undefined {
  return byName.get(name);
}

export const isPoaAction = (v: unknown): v is PoaAction => POA_ACTIONS.includes(v as PoaAction);

/**
 * Why `value` is not a label (1 to 32 characters, no control characters or noncharacters, nothing
 * that changes how text is displayed: src/display.ts), or null.
 */
export function labelProblem(value: unknown): string | null {
  if (typeof value !== "string") return "must be a string";
  const length = [...value].length;
  if (length === 0) return "must not be empty";
  if (length > LABEL_MAX) return `must be at most ${LABEL_MAX} characters (got ${length})`;
  // The one rule for display text (src/pdu/display.ts), the same the bridge applies to what it shows.
  const problem = displayTextProblem(value);
  return problem === null ? null : `must be printable text that displays as written (it ${problem})`;
}

/** Why `value` is not a value of the setting (a JSON value, never converted), or null. */
export function valueProblem(row: SettingRow, value: unknown): string | null {
  switch (row.kind) {
    case "label":
      return labelProblem(value);
    case "delay":
      if (typeof value !== "number" || !Number.isInteger(value))
        return "must be a whole number of seconds (a JSON integer, not a string)";
      return value < 0 || value > DELAY_MAX ? `must be between 0 and ${DELAY_MAX} seconds` : null;
    case "poaAction":
      return isPoaAction(value) ? null : `must be one of ${POA_ACTIONS.join(", ")}`;
  }
}

/**
 * Why `settings` (a parsed body, any shape) is not a settings write allowed by `allowed`, or null:
 * an object with at least one field, every field allowed and valid.
 */
export function settingsProblem(settings: unknown, allowed: readonly SettingName[]): string | null {
  if (typeof settings !== "object" || settings === null || Array.isArray(settings))
    return "the settings must be a JSON object";
  const entries = Object.entries(settings);
  if (entries.length === 0) return `give at least one of ${allowed.join(", ")}`;
  for (const [name, value] of entries) {
    const row = setting(name);
    if (row === undefined || !allowed.includes(row.name))
      return `${JSON.stringify(name.slice(0, 40))} is not a setting here; use ${allowed.join(", ")}`;
    const problem = valueProblem(row, value);
    if (problem !== null) return `${name} ${problem}`;
  }
  return null;
}

/** Whether a `Protected` outlet refuses `value` of the setting (see {@link SettingRow.whenProtected}). */
export function refusedWhenProtected(row: SettingRow, value: unknown): boolean {
  const rule = row.whenProtected;
  return rule !== null && (rule.refuses === "all" || rule.refuses.includes(String(value)));
}

/**
 * Why a `Protected` outlet refuses these settings (already valid), naming each refused one, or
 * null when it takes them all.
 */
export function protectedSettingsProblem(settings: OutletSettings): string | null {
  const refused = Object.entries(settings).flatMap(([name, value]) => {
    const row = setting(name);
    if (row === undefined || !refusedWhenProtected(row, value)) return [];
    const what = row.whenProtected?.refuses === "all" ? name : `${name} ${String(value)}`;
    return [`${what} (${row.whenProtected?.why ?? ""})`];
  });
  return refused.length === 0 ? null : refused.join(" and ");
}

/** The power-on actions a Home Assistant select offers for an outlet (not those it would refuse). */
export function offeredPoaActions(isProtected: boolean): readonly PoaAction[] {
  const row = setting("poaAction");
  return isProtected && row !== undefined
    ? POA_ACTIONS.filter((a) => !refusedWhenProtected(row, a))
    : POA_ACTIONS;
}

/** Plain decimal, no sign, no leading zero: what an MQTT delay payload must be. */
const DECIMAL = /^(0|[1-9][0-9]{0,3})$/;

/**
 * An MQTT payload (text, surrounding blanks ignored except for a label, which is taken as sent) as
 * a setting's value, or why it is not one.
 */
export function valueFromMqtt(
  row: SettingRow,
  payload: string,
): { readonly ok: true; readonly value: string | number } | { readonly ok: false; readonly problem: string } {
  let value: string | number = payload;
  if (row.kind === "delay") {
    const text = payload.trim();
    if (!DECIMAL.test(text))
      return { ok: false, problem: `must be a whole number of seconds in plain decimal (0 to ${DELAY_MAX})` };
    value = Number(text);
  } else if (row.kind === "poaAction") value = payload.trim();
  const problem = valueProblem(row, value);
  return problem === null ? { ok: true, value } : { ok: false, problem };
}
