/**
 * Checks an OpenAPI 3.1 document and live responses against it: the document with
 * @seriousme/openapi-schema-validator, and each response's status, media type, body and declared
 * headers against what the document declares for its path, method and status (ajv, JSON Schema
 * 2020-12, `$ref`s resolved inside the document).
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { HttpResponse } from "./http-harness.js";

// ajv-formats is CommonJS: its function is the default export's default under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

type Json = Record<string, unknown>;

export async function validateOpenApiDocument(
  document: unknown,
): Promise<{ valid: boolean; errors: unknown }> {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(document) as Record<string, unknown>);
  return { valid: result.valid, errors: result.errors };
}

const DOC_ID = "https://openapi.test/document.json";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** A JSON pointer as a URI fragment. */
const pointer = (segments: readonly string[]): string =>
  segments.map((s) => encodeURIComponent(s.replaceAll("~", "~0").replaceAll("/", "~1"))).join("/");

export interface CheckResult {
  /** The operation (`GET /api/v1/readings`) the response was checked against, or null when undocumented. */
  readonly operation: string | null;
  /** Mismatches; empty when the response matches. */
  readonly problems: string[];
}

export class OpenApiChecker {
  readonly #doc: Json;
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true });
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(document: unknown) {
    this.#doc = document as Json;
    addFormats(this.#ajv);
    this.#ajv.addSchema(this.#doc, DOC_ID);
  }

  /** Path template and method of the documented operation serving `method path`, if any. */
  findOperation(method: string, path: string): { template: string; operation: Json } | null {
    const bare = path.split("?", 1)[0] ?? path;
    const paths = (this.#doc.paths ?? {}) as Record<string, Json>;
    for (const [template, item] of Object.entries(paths)) {
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
      const operation = item[method.toLowerCase()];
      if (pattern.test(bare) && METHODS.includes(method.toLowerCase()) && operation) {
        return { template, operation: operation as Json };
      }
    }
    return null;
  }

  /** The component schema `name` (for checking undocumented responses, e.g. 404 problems). */
  schemaValidator(name: string): ValidateFunction {
    return this.#validator(["components", "schemas", name]);
  }

  check(response: HttpResponse): CheckResult {
    const found = this.findOperation(response.method, response.path);
    if (!found) return { operation: null, problems: [] };
    const operation = `${response.method} ${found.template}`;
    const problems: string[] = [];
    const responses = (found.operation.responses ?? {}) as Record<string, Json>;
    const status = String(response.status);
    const key = status in responses ? status : `${status[0]}XX` in responses ? `${status[0]}XX` : "default";
    const declared = responses[key];
    if (!declared) return { operation, problems: [`status ${status} is not declared for ${operation}`] };

    const content = declared.content as Record<string, Json> | undefined;
    const mediaType = (response.headers["content-type"] ?? "").split(";", 1)[0]?.trim() ?? "";
    if (content === undefined) {
      if (response.text !== "") problems.push(`${operation} ${status}: body sent but no content declared`);
    } else if (!(mediaType in content)) {
      problems.push(
        `${operation} ${status}: media type "${mediaType}" not declared (${Object.keys(content).join(", ")})`,
      );
    } else {
      const path = [
        "paths",
        found.template,
        response.method.toLowerCase(),
        "responses",
        key,
        "content",
        mediaType,
        "schema",
      ];
      const validate = this.#validator(path);
      if (!validate(response.json())) {
        problems.push(
          `${operation} ${status}: body does not match: ${this.#ajv.errorsText(validate.errors)}`,
        );
      }
    }

    const headers = (declared.headers ?? {}) as Record<string, Json>;
    for (const [name, header] of Object.entries(headers)) {
      const value = response.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required === true) problems.push(`${operation} ${status}: header ${name} missing`);
        continue;
      }
      const schema = header.schema as Json | undefined;
      const parsed = schema?.type === "integer" || schema?.type === "number" ? Number(value) : value;
      const validate = this.#validator([
        "paths",
        found.template,
        response.method.toLowerCase(),
        "responses",
        key,
        "headers",
        name,
        "schema",
      ]);
      if (!validate(parsed))
        problems.push(`${operation} ${status}: header ${name}=${String(value)} does not match`);
    }
    return { operation, problems };
  }

  #validator(path: readonly string[]): ValidateFunction {
    const ref = `${DOC_ID}#/${pointer(path)}`;
    let validate = this.#compiled.get(ref);
    if (!validate) {
      validate = this.#ajv.compile({ $ref: ref });
      this.#compiled.set(ref, validate);
    }
    return validate;
  }
}

/**
 * Checks every response a test collected against the live document of the same listener:
 * documented operations against their declared responses, everything else (404/405 of unknown
 * paths and methods) against the Problem schema. Returns the mismatches and what was checked.
 */
export function checkResponses(
  document: unknown,
  responses: readonly HttpResponse[],
): { problems: string[]; operations: Set<string>; statuses: Set<string> } {
  const checker = new OpenApiChecker(document);
  const problem = checker.schemaValidator("Problem");
  const problems: string[] = [];
  const operations = new Set<string>();
  const statuses = new Set<string>();
  for (const response of responses) {
    const result = checker.check(response);
    problems.push(...result.problems);
    if (result.operation !== null) {
      operations.add(result.operation);
      statuses.add(`${result.operation} ${response.status}`);
      continue;
    }
    const mediaType = (response.headers["content-type"] ?? "").split(";", 1)[0];
    if (response.status >= 400 && response.method !== "HEAD") {
      if (mediaType !== "application/problem+json") {
        problems.push(`${response.method} ${response.path} ${response.status}: not application/problem+json`);
      } else if (!problem(response.json())) {
        problems.push(`${response.method} ${response.path} ${response.status}: not a Problem`);
      }
    }
  }
  return { problems, operations, statuses };
}
