/**
 * The two cookies of the console's sign-in: the session (an opaque random id) and the sign-in in
 * progress (its state, nonce, PKCE verifier and return path, sealed with AES-256-GCM under a key
 * that lives in this process only, so nothing is kept on the server for a sign-in that is never
 * finished). Both `HttpOnly`, `SameSite=Lax`, `Path=/`; over HTTPS `Secure` with the `__Host-`
 * prefix (no other host or path can set or shadow them).
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

export interface CookieNames {
  readonly session: string;
  readonly signIn: string;
}

export function cookieNames(secure: boolean): CookieNames {
  const prefix = secure ? "__Host-" : "";
  return { session: `${prefix}pdu-bridge-session`, signIn: `${prefix}pdu-bridge-signin` };
}

/** A cookie's value from a Cookie header (the first of that name), or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined || header.length > 16_384) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A Set-Cookie value; `maxAge` in seconds (0 deletes it; undefined: until the browser closes). */
export function setCookie(name: string, value: string, secure: boolean, maxAge?: number): string {
  return [
    `${name}=${value}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Lax",
    ...(secure ? ["Secure"] : []),
    ...(maxAge === undefined ? [] : [`Max-Age=${maxAge}`]),
  ].join("; ");
}

/** Seals and opens small JSON values for a cookie: authenticated encryption, base64url. */
export class CookieSeal {
  readonly #key = randomBytes(32);

  seal(value: unknown): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
  }

  /** The value, or undefined when the text was not sealed here (altered, another process, garbage). */
  open(text: string): unknown {
    if (text.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
    const raw = Buffer.from(text, "base64url");
    // Only the one spelling this process writes: base64url leaves the last character's low bits
    // unused, and a text altered there must not open as the original.
    if (raw.length < 29 || raw.toString("base64url") !== text) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      const plain = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
      return JSON.parse(plain) as unknown;
    } catch {
      return undefined;
    }
  }
}
