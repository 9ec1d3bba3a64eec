/**
 * What is generated from the schema: `config.schema.json` (for editors) and the key reference in
 * `docs/configuration.md`. Pure functions; `scripts/gen-config-schema.ts` formats and writes them.
 */
import { ConfigSchema } from "./schema.js";
import { asSchemaNode, isPlainObject, scalarText, type SchemaNode } from "./validate.js";

export const JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

/**
 * The schema as editors should see the file: keys with a default are optional (the loader fills
 * them in), and instance ids outside the id pattern are flagged.
 */
export function configJsonSchema(): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(ConfigSchema)) as Record<string, unknown>;
  forEditors(copy);
  const pdus = (copy.properties as Record<string, Record<string, unknown>> | undefined)?.Pdus;
  if (pdus !== undefined) pdus.additionalProperties = false;
  const { title, ...rest } = copy;
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title,
    description:
      "The pdu-bridge configuration file (config.yaml). Keys are PascalCase; unknown keys are errors. " +
      "Secrets (passwords, the API key) belong in SERVICE_* environment variables.",
    ...rest,
  };
}

function forEditors(node: Record<string, unknown>): void {
  const properties = isPlainObject(node.properties) ? node.properties : {};
  if (Array.isArray(node.required)) {
    const required = node.required.filter((key) => {
      const child = properties[String(key)];
      return !(isPlainObject(child) && "default" in child);
    });
    if (required.length > 0) node.required = required;
    else delete node.required;
  }
  for (const value of Object.values(node)) {
    if (isPlainObject(value)) forEditors(value);
    if (Array.isArray(value)) for (const item of value) if (isPlainObject(item)) forEditors(item);
  }
}

/** One row of the reference: a key in dotted form (`Pdus.<id>.Connection.Host`) and what it takes. */
export interface ReferenceRow {
  readonly key: string;
  readonly type: string;
  readonly default: string;
  readonly description: string;
}

export function referenceRows(schema: SchemaNode = asSchemaNode(ConfigSchema)): ReferenceRow[] {
  const rows: ReferenceRow[] = [];
  const visit = (node: SchemaNode, prefix: string) => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const path = prefix === "" ? key : `${prefix}.${key}`;
      if (child.patternProperties !== undefined) rows.push(row(path, child, node, key));
      visitValue(child, path, node, key);
    }
  };
  /** A map's values (maps of maps too, like Overrides.Outlets), an object's keys, or the key itself. */
  const visitValue = (child: SchemaNode, path: string, parent: SchemaNode, key: string) => {
    const item = Object.values(child.patternProperties ?? {})[0];
    if (item !== undefined) {
      const inner = `${path}.<${child.keyName ?? "id"}>`;
      if (item.patternProperties !== undefined || item.properties === undefined) {
        visitValue(item, inner, child, "");
      } else visit(item, inner);
    } else if (child.properties !== undefined) {
      visit(child, path);
    } else if (parent.patternProperties === undefined || child.properties === undefined) {
      rows.push(row(path, child, parent, key));
    }
  };
  visit(schema, "");
  return rows;
}

function row(path: string, node: SchemaNode, parent: SchemaNode, key: string): ReferenceRow {
  const required = parent.required?.includes(key) === true && !("default" in node);
  return {
    key: path,
    type: typeText(node),
    // Optional without a default: a nullable key is simply absent (Mqtt.Connection.Host), the others are inferred.
    default:
      "default" in node
        ? showDefault(node.default)
        : required
          ? "**required**"
          : node.whenAbsent !== undefined
            ? node.whenAbsent
            : node.anyOf?.some((b) => b.type === "null") === true
              ? "(none)"
              : "(inferred)",
    description:
      node.appliesLive === true
        ? `${node.description ?? ""}; applies without a restart (Kubernetes source)`
        : (node.description ?? ""),
  };
}

function typeText(node: SchemaNode): string {
  if (node.enum !== undefined) return node.enum.map((v) => `\`${scalarText(v)}\``).join(", ");
  if (node.anyOf !== undefined) {
    return node.anyOf
      .map((b) => (b.const !== undefined ? `\`${scalarText(b.const)}\`` : typeText(b)))
      .join(" or ");
  }
  const limits: string[] = [];
  if (node.minimum !== undefined) limits.push(`>= ${node.minimum}`);
  if (node.exclusiveMinimum !== undefined) limits.push(`> ${node.exclusiveMinimum}`);
  if (node.maximum !== undefined) limits.push(`<= ${node.maximum}`);
  if (node.minLength === 1) limits.push("non-empty");
  if (node.maxLength !== undefined) limits.push(`at most ${node.maxLength} characters`);
  if (node.type === "object" && node.patternProperties !== undefined) {
    return node.keyName === undefined ? "map of instance id to PDU" : `map by ${node.keyName}`;
  }
  if (node.type === "array") return "list of strings";
  const name = node.type === "object" ? "mapping" : (node.type ?? "any");
  return limits.length === 0 ? name : `${name} (${limits.join(", ")})`;
}

function showDefault(value: unknown): string {
  if (isPlainObject(value)) return "";
  if (Array.isArray(value)) return value.length === 0 ? "`[]`" : `\`${JSON.stringify(value)}\``;
  return `\`${value === "" ? '""' : scalarText(value)}\``;
}

/** A table cell: pipes escaped, variable names as code (so `<ID>` is not read as HTML). */
const cell = (text: string) =>
  text
    .replaceAll("|", "\\|")
    .replaceAll("\n", " ")
    .replace(/\bSERVICE_[A-Z0-9_<>]+/g, (name) => `\`${name}\``);

/** The reference as Markdown: one table per top-level section. */
export function referenceMarkdown(): string {
  const sections = new Map<string, ReferenceRow[]>();
  for (const r of referenceRows()) {
    const section = r.key.split(".")[0] ?? r.key;
    sections.set(section, [...(sections.get(section) ?? []), r]);
  }
  const parts: string[] = [];
  for (const [section, rows] of sections) {
    parts.push(`### ${section}`, "", "| Key | Type | Default | Meaning |", "|---|---|---|---|");
    for (const r of rows) {
      parts.push(`| \`${r.key}\` | ${cell(r.type)} | ${cell(r.default)} | ${cell(r.description)} |`);
    }
    parts.push("");
  }
  return parts.join("\n");
}
