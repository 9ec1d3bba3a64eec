/**
 * Path parameters of the control endpoints: strings checked by exact rules, never converted.
 *
 * Why strings: a validator that converts an integer parameter before checking it reads ` `,
 * `false`, `0.9999`, `-0` and `1e-7` as outlet 0 and `true`, `1.5`, `0x1`, `+1`, `01` and `1e0` as
 * outlet 1, and each would switch a real outlet. A parameter either matches its rule as sent or the
 * request is 400 and nothing is written.
 */
import Format from "typebox/format";
import Type from "typebox";
import { InstanceIdPattern } from "../../config/schema.js";
import { LABEL_MAX, labelProblem } from "../../control/settings.js";

/** An outlet index as the PDU writes it: decimal, no sign, no leading zero, at most six digits. */
export const OUTLET_INDEX_PATTERN = "^(0|[1-9][0-9]{0,5})$";
const OUTLET_INDEX = new RegExp(OUTLET_INDEX_PATTERN);

/** Longest device id or group key accepted, in UTF-8 bytes (what topics and write URLs can hold). */
export const MAX_NAME_BYTES = 128;

/** The typebox format of device ids and group keys (see {@link isSafeName}). */
export const NAME_FORMAT = "pdu-name";

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * A device id or group key this service can address: not empty, at most 128 UTF-8 bytes, not `.`
 * or `..` (URL normalisation would turn them into another path), and without `/`, C0 or C1 control
 * characters, DEL, U+FFFE, U+FFFF or a lone surrogate.
 */
export function isSafeName(name: string): boolean {
  if (name === "" || name === "." || name === "..") return false;
  if (LONE_SURROGATE.test(name)) return false;
  if (Buffer.byteLength(name, "utf8") > MAX_NAME_BYTES) return false;
  // eslint-disable-next-line no-control-regex
  return !/[/\u0000-\u001f\u007f-\u009f\ufffe\uffff]/.test(name);
}

export const isOutletIndex = (text: string): boolean => OUTLET_INDEX.test(text);

Format.Set(NAME_FORMAT, isSafeName);

/** The typebox format of a label written to the PDU (src/control/settings.ts, the one rule). */
export const LABEL_FORMAT = "pdu-label";
Format.Set(LABEL_FORMAT, (label) => labelProblem(label) === null);

/** What each rule means, for the 400 detail (keyed by the schema's pattern or format). */
export const RULE_WORDS: Readonly<Record<string, string>> = {
  [OUTLET_INDEX_PATTERN]:
    "must be a 0-based outlet index in plain decimal (0 to 999999: no sign, no leading zero, no spaces, no exponent)",
  [InstanceIdPattern]: "must be an instance id: 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
  [NAME_FORMAT]:
    "must be 1 to 128 bytes of UTF-8, not . or .., without /, control characters, U+FFFE or U+FFFF",
  [LABEL_FORMAT]:
    `must be 1 to ${LABEL_MAX} printable characters (no control characters or noncharacters, and nothing ` +
    "that changes how text is displayed: no bidirectional formatting characters such as U+202E, no line or paragraph separators)",
};

export const InstanceIdParam = Type.String({
  pattern: InstanceIdPattern,
  description: "Instance id (the key under `Pdus`)",
});

export const DeviceIdParam = Type.String({
  format: NAME_FORMAT,
  description:
    "The PDU's device id (e.g. A0AE260C851900C3): 1 to 128 bytes, not `.`/`..`, no `/` or control characters",
});

export const OutletIndexParam = Type.String({
  pattern: OUTLET_INDEX_PATTERN,
  description:
    "0-based outlet index (0 is the PDU's `Outlet 1`) in plain decimal: `0`, `7`; never `01`, `+1`, `1.0` or `1e0`",
});

export const EntityKeyParam = Type.String({
  format: NAME_FORMAT,
  description: "Entity key of the device (`phase0`, `breaker1`, `total0`, ...), exact",
});

export const GroupKeyParam = Type.String({
  format: NAME_FORMAT,
  description: "OneView group key (`total`, `2`, ...), case-insensitive",
});
