/**
 * The one rule for display text, whoever supplies it: {@link displayTextProblem}. Text the bridge
 * shows (names, labels and states a PDU sends, applied to every snapshot by the bounds of
 * ./bounds.ts, which read such a text as blank so a display name falls back to the next one) and
 * text operators write (labels over REST and MQTT, override `Name`s) may contain neither a control
 * character, a noncharacter or a lone surrogate (./names.ts) nor a character that changes how the
 * text around it is displayed: the bidirectional formatting characters (embeddings, overrides,
 * isolates and marks: U+202E shows `exe.txt` as `txt.exe`) and the line and paragraph separators
 * (U+2028, U+2029: a line break in a one-line label). So Home Assistant names, metrics labels,
 * REST readings and the console never show what a label written through the bridge could not be.
 */
import { forbiddenCharacter } from "./names.js";

/** Why each refused code point is refused, by code point. */
const SPOOFING: ReadonlyMap<number, string> = new Map([
  [0x061c, "a bidirectional mark"],
  [0x200e, "a bidirectional mark"],
  [0x200f, "a bidirectional mark"],
  [0x202a, "a bidirectional embedding"],
  [0x202b, "a bidirectional embedding"],
  [0x202c, "a bidirectional formatting character"],
  [0x202d, "a bidirectional override"],
  [0x202e, "a bidirectional override"],
  [0x2066, "a bidirectional isolate"],
  [0x2067, "a bidirectional isolate"],
  [0x2068, "a bidirectional isolate"],
  [0x2069, "a bidirectional isolate"],
  [0x2028, "a line separator"],
  [0x2029, "a paragraph separator"],
]);

const ANY = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/u;

/**
 * The first character of `text` that changes how text is displayed, described
 * (`U+202E, a bidirectional override`), or null when there is none.
 */
export function displaySpoofing(text: string): string | null {
  const found = ANY.exec(text);
  if (found === null) return null;
  const cp = found[0].codePointAt(0)!;
  return `U+${cp.toString(16).toUpperCase().padStart(4, "0")}, ${SPOOFING.get(cp) ?? "a formatting character"}`;
}

/**
 * Why `text` may not be shown or written as display text (a control character, a noncharacter, a
 * lone surrogate, or a character that changes how text is displayed), described, or null.
 */
export function displayTextProblem(text: string): string | null {
  const bad = forbiddenCharacter(text);
  if (bad !== null) return `contains ${bad}`;
  const spoofing = displaySpoofing(text);
  return spoofing === null ? null : `contains ${spoofing}, which changes how text is displayed`;
}
