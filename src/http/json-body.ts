/**
 * JSON request bodies: fastify's own parser (secure-json-parse; `__proto__` keys and
 * `constructor.prototype` are refused) plus the refusal of duplicate keys.
 *
 * JSON.parse (and so secure-json-parse) keeps the last of two equal keys, so
 * `{"action":"on","action":"off"}` would switch an outlet off while a proxy, a log reader or a
 * first-wins parser sees `on`. RFC 8259 leaves the meaning of duplicate names undefined; for a body
 * that switches power the service refuses it with 400 instead of guessing.
 */
import type { FastifyRequest } from "fastify";
import type { HttpApp } from "./types.js";

/** `code` of the error a body with a duplicate key raises (mapped to a 400 problem). */
export const DUPLICATE_KEY_CODE = "PDU_BRIDGE_DUPLICATE_JSON_KEY";

export class DuplicateKeyError extends Error {
  readonly code = DUPLICATE_KEY_CODE;
  readonly statusCode = 400;
  constructor(readonly key: string) {
    super(`duplicate key ${JSON.stringify(key)} in the JSON body`);
  }
}

/**
 * The first key that appears twice in the same object of `text`, compared after unescaping
 * (`"action"` and `"\u0061ction"` are the same key), or undefined. `text` must be valid JSON.
 */
export function duplicateKey(text: string): string | undefined {
  // One entry per open container: the keys seen so far of an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let end = i + 1;
      while (text.charCodeAt(end) !== 0x22) end += text.charCodeAt(end) === 0x5c /* \ */ ? 2 : 1;
      const keys = open.at(-1);
      if (expectKey && keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return key;
        keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */) {
      open.push(new Set());
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      open.push(null);
      expectKey = false;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      open.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      expectKey = open.at(-1) instanceof Set;
    }
  }
  return undefined;
}

type Done = (error: Error | null, body?: unknown) => void;
type CallbackParser = (request: FastifyRequest, body: string, done: Done) => void;

/** Replaces the `application/json` parser of `app` (the body limit still applies while reading). */
export function installJsonBodyParser(app: HttpApp): void {
  // The default parser is the callback form (fastify's own defaultJsonParser).
  const secureParse = app.getDefaultJsonParser("error", "error") as CallbackParser;
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done: Done) => {
    secureParse(request, body as string, (error, value) => {
      if (error) {
        done(error);
        return;
      }
      const key = duplicateKey(body as string);
      if (key === undefined) done(null, value);
      else done(new DuplicateKeyError(key));
    });
  });
}
