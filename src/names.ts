/**
 * Names a PDU supplies (device ids, outlet keys, entity keys, measurement types, group keys) are
 * data, never trusted as MQTT topic levels, discovery ids or URL path segments (docs/control.md, PDU-supplied names). This
 * is the one predicate that decides whether such a name may become one; MQTT, discovery and control
 * all use it. REST readings may still show an unsafe name (JSON-escaped): they only display it.
 *
 * Unsafe: empty; longer than {@link MAX_NAME_BYTES} UTF-8 bytes; `.` or `..` (URL normalisation
 * would turn them into another path); containing `/`, `+` or `#` (topic separators and wildcards),
 * a C0 control character (NUL included), DEL, a C1 control character, a Unicode noncharacter
 * (U+FDD0-U+FDEF and U+xxFFFE/U+xxFFFF in every plane, U+FFFE and U+FFFF among them) or a lone
 * surrogate (no UTF-8 form). A strict MQTT broker (mosquitto) drops the connection of a client that
 * publishes a topic with any of these characters in it, so one such name would otherwise cut every
 * PDU off MQTT.
 */

/** Longest safe name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 128;

/** UTF-16 units that may start a forbidden character (surrogates: astral noncharacters, lone ones). */
// eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
const SUSPECT = /[\u0000-\u001f\u007f-\u009f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]/;

/** Whether code point `cp` may never be in a topic (control characters and noncharacters). */
export function isForbiddenCodePoint(cp: number): boolean {
  if (cp <= 0x1f) return true; // C0, NUL included
  if (cp >= 0x7f && cp <= 0x9f) return true; // DEL and C1
  if (cp >= 0xfdd0 && cp <= 0xfdef) return true; // noncharacters
  return (cp & 0xfffe) === 0xfffe; // U+xxFFFE and U+xxFFFF in every plane
}

/**
 * The first character of `text` that a strict broker refuses in a topic (a control character, a
 * noncharacter or a lone surrogate), described as `U+XXXX`, or null when there is none.
 */
export function forbiddenCharacter(text: string): string | null {
  // Fast path (every topic is checked before it is published): no suspect UTF-16 unit at all.
  if (!SUSPECT.test(text)) return null;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    let cp = unit;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (next < 0xdc00 || next > 0xdfff) return `a lone surrogate U+${hex(unit)}`;
      cp = 0x10000 + ((unit - 0xd800) << 10) + (next - 0xdc00);
      i++;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      return `a lone surrogate U+${hex(unit)}`;
    }
    if (isForbiddenCodePoint(cp)) return `the control character or noncharacter U+${hex(cp)}`;
  }
  return null;
}

/** Why `name` cannot become a topic level, discovery id or URL segment, or null when it can. */
export function nameProblem(name: string): string | null {
  if (name === "") return "is empty";
  // Every UTF-16 unit is at most 3 UTF-8 bytes: only long strings need counting.
  if (name.length * 3 > MAX_NAME_BYTES && Buffer.byteLength(name, "utf8") > MAX_NAME_BYTES) {
    return `is longer than ${MAX_NAME_BYTES} bytes`;
  }
  if (name === "." || name === "..") return "is . or ..";
  if (name.includes("/") || name.includes("+") || name.includes("#")) return "contains '/', '+' or '#'";
  const bad = forbiddenCharacter(name);
  return bad === null ? null : `contains ${bad}`;
}

/** The one predicate for "safe name". */
export function isSafeName(name: string): boolean {
  return nameProblem(name) === null;
}

/**
 * A name as it may appear in a log line or an error message: JSON-quoted (so control characters
 * are escaped) and cut to `max` characters, so a 64 KiB id cannot flood the log.
 */
export function quoteName(name: string, max = 64): string {
  const cut = name.length > max ? `${name.slice(0, max)}…` : name;
  const quoted = JSON.stringify(cut);
  return name.length > max ? `${quoted} (${Buffer.byteLength(name, "utf8")} bytes)` : quoted;
}

/**
 * One URL path segment from a name: refused when unsafe (so never `.`/`..`, which URL parsing
 * would normalise away, also as `%2e`), else percent-encoded.
 */
export function pathSegment(name: string, what: string): string {
  const problem = nameProblem(name);
  if (problem !== null)
    throw new RangeError(`${what} ${quoteName(name)} ${problem}: it cannot be part of a URL`);
  return encodeURIComponent(name);
}

function hex(n: number): string {
  return n.toString(16).toUpperCase().padStart(4, "0");
}
