/**
 * The digest of a poll's answer, which the driver compares with the previous poll's to return the
 * previous snapshot restamped when nothing changed: 64 bits over every varbind's OID, type and
 * value, in order, taken from the varbinds as they are. No text or buffer of the answer is made
 * (an answer is hundreds of varbinds, and such a text was a tenth of all a poll allocated).
 *
 * Two 32-bit lanes take the same stream of 32-bit words (each list's length; each varbind's OID
 * length and its UTF-16 code units two to a word, its type, then its value: a number's low and
 * high 32 bits, bytes' count and the bytes four to a word, null a tag of its own), each step a
 * bijection of the lane (xor, a multiplication by an odd constant, an xor-shift), the two with
 * other constants, and each finished with MurmurHash3's fmix32.
 *
 * Not cryptographic, and it needs not be: two answers of one digest make the driver return the
 * previous snapshot of the same agent restamped, which that agent gets anyway by sending its
 * previous answer again; by chance, two different answers share a digest about once in 2^64.
 */
import type { WalkedVarbind } from "./rows.js";

const TYPE_WORDS: Readonly<Record<string, number>> = {
  Integer: 1,
  OctetString: 2,
  Gauge: 3,
  Counter: 4,
  Unsigned: 5,
  IpAddress: 6,
  ObjectIdentifier: 7,
  Other: 8,
};
/** Tags of what a value is (apart from the type words). */
const NULL = 16;
const INTEGER = 17;
const BYTES = 18;
const OTHER_NUMBER = 19;
const OTHER_TYPE = 20;

/** The lanes of the digest being taken (the functions here are synchronous: one digest at a time). */
let a = 0;
let b = 0;

function word(k: number): void {
  a = Math.imul(a ^ k, 0x9e3779b1);
  a ^= a >>> 15;
  b = Math.imul(b ^ k, 0x85ebca77);
  b ^= b >>> 13;
}

/** A string's length and UTF-16 code units, two to a word. */
function text(s: string): void {
  const n = s.length;
  word(n);
  let i = 0;
  for (; i + 1 < n; i += 2) word(s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
  if (i < n) word(s.charCodeAt(i));
}

/** Bytes' count and the bytes, four to a word. */
function bytes(v: Buffer): void {
  const n = v.length;
  word(BYTES);
  word(n);
  let i = 0;
  for (; i + 3 < n; i += 4) word(v[i]! | (v[i + 1]! << 8) | (v[i + 2]! << 16) | (v[i + 3]! << 24));
  let last = 0;
  for (let shift = 0; i < n; i++, shift += 8) last |= v[i]! << shift;
  word(last);
}

function value(v: WalkedVarbind["value"]): void {
  if (v === null) word(NULL);
  else if (typeof v !== "number") bytes(v);
  else if (Number.isSafeInteger(v)) {
    word(INTEGER);
    word(v | 0); // the low 32 bits
    word(Math.floor(v / 2 ** 32) | 0);
  } else {
    word(OTHER_NUMBER);
    text(String(v));
  }
}

/** MurmurHash3's finalizer: every bit of the lane on every bit of the result. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The digest of the varbind lists, in order: 16 hexadecimal digits. */
export function digestOf(lists: readonly (readonly WalkedVarbind[])[]): string {
  a = 0x811c9dc5;
  b = 0x2545f491;
  word(lists.length);
  for (const list of lists) {
    word(list.length);
    for (const vb of list) {
      text(vb.oid);
      const type = TYPE_WORDS[vb.type];
      if (type !== undefined) word(type);
      else {
        word(OTHER_TYPE);
        text(vb.type);
      }
      value(vb.value);
    }
  }
  const high = fmix32(a);
  const low = fmix32(b ^ high);
  return high.toString(16).padStart(8, "0") + low.toString(16).padStart(8, "0");
}
