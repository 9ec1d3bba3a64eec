/**
 * What a signed-in user may do, from the provider's claims: `Api.Oidc.RolesClaim` names the claim
 * holding their groups or roles (a dotted path reaches into objects, as Keycloak's
 * `realm_access.roles`; a claim whose own name has dots is found first), `Api.Oidc.Roles` which of
 * its values make a viewer or an operator. Everything here is the provider's data: only strings are
 * read, and names are trimmed to what a log line and a page can show.
 */
import type { ConsoleUser } from "../../control/types.js";
import type { ConsoleRole } from "./principal.js";

/** Values of the roles claim read at most (a provider sending more is cut, not trusted further). */
const MAX_CLAIM_VALUES = 1024;
const MAX_NAME = 128;
const MAX_SUBJECT = 255;

type Claims = Readonly<Record<string, unknown>>;

/** The claim at `path`: the claim of that exact name, else the dotted path through objects. */
export function claimAt(claims: Claims, path: string): unknown {
  if (Object.hasOwn(claims, path)) return claims[path];
  let node: unknown = claims;
  for (const part of path.split(".")) {
    if (typeof node !== "object" || node === null || Array.isArray(node) || !Object.hasOwn(node, part))
      return undefined;
    node = (node as Claims)[part];
  }
  return node;
}

/** The claim's values as strings: an array of strings or one string (anything else counts as none). */
export function claimValues(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (!Array.isArray(value)) return [];
  return value.slice(0, MAX_CLAIM_VALUES).filter((v): v is string => typeof v === "string");
}

export interface RoleRules {
  readonly Viewer: readonly string[];
  readonly Operator: readonly string[];
}

/** Operator when any value is an operator group, else viewer when any is a viewer group, else null. */
export function roleOf(values: readonly string[], rules: RoleRules): ConsoleRole | null {
  if (values.some((v) => rules.Operator.includes(v))) return "operator";
  if (values.some((v) => rules.Viewer.includes(v))) return "viewer";
  return null;
}

/** Printable text only (no control characters), at most `max` characters. */
function printable(text: string, max: number): string {
  return [...text.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, "")].slice(0, max).join("").trim();
}

/** The user: the subject, and a name from `name`, `preferred_username` or `email` (else the subject). */
export function userOf(claims: Claims): ConsoleUser | null {
  // The subject identifies the user: it is taken as it is or not at all.
  const sub = claims.sub;
  if (typeof sub !== "string" || sub === "" || sub.length > MAX_SUBJECT || /[\p{Cc}\p{Cf}]/u.test(sub))
    return null;
  for (const key of ["name", "preferred_username", "email"]) {
    const value = claims[key];
    if (typeof value === "string") {
      const name = printable(value, MAX_NAME);
      if (name !== "") return { sub, name };
    }
  }
  return { sub, name: sub };
}
