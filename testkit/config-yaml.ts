/**
 * The one writer of configuration files for tests and benchmarks: a document shaped by the
 * configuration schema (every key optional, so a misspelt key does not compile) written as YAML.
 * A test that needs text the schema refuses writes that text itself.
 */
import { stringify } from "yaml";
import type { FileConfig } from "../src/config/schema.js";

type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** A configuration file's document. */
export type ConfigDocument = DeepPartial<FileConfig>;
/** One `Pdus.<id>` entry. */
export type PduDocument = DeepPartial<FileConfig["Pdus"][string]>;

/** The YAML text of a configuration document (block style, a key per line). */
export function configYaml(doc: ConfigDocument): string {
  return stringify(doc, { lineWidth: 0 });
}

/**
 * The YAML of `doc` indented by `spaces`, without the last newline: a fragment to place inside a
 * larger file (the `Pdus` entries of app-harness.ts's `pduYaml`).
 */
export function yamlFragment(doc: Readonly<Record<string, unknown>>, spaces: number): string {
  const pad = " ".repeat(spaces);
  return stringify(doc, { lineWidth: 0 })
    .trimEnd()
    .split("\n")
    .map((line) => pad + line)
    .join("\n");
}
