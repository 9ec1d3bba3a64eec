/**
 * The one error type of configuration loading. Its message is complete on its own (key, problem,
 * file and line) so the CLI prints just the message, never a stack trace.
 */

export interface ConfigErrorLocation {
  /** The configuration file (or other origin) the key is in. */
  readonly file?: string;
  /** 1-based line of the key in that file. */
  readonly line?: number;
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  /** The key in dotted form (`Pdus.rack-a.PollInterval`), a variable (`SERVICE_API_KEY_FILE`), or "" for the file as a whole. */
  readonly key: string;
  /** The problem in plain words, without key or location. */
  readonly problem: string;
  readonly file?: string;
  readonly line?: number;

  constructor(key: string, problem: string, where: ConfigErrorLocation = {}) {
    super(formatConfigError(key, problem, where));
    this.key = key;
    this.problem = problem;
    if (where.file !== undefined) this.file = where.file;
    if (where.line !== undefined) this.line = where.line;
  }
}

/** `config error: Pdus.rack-a.PollInterval: must be >= 1 (got 0) at /etc/x.yaml line 12` */
export function formatConfigError(key: string, problem: string, where: ConfigErrorLocation = {}): string {
  let location = "";
  if (where.file !== undefined) {
    location = where.line === undefined ? ` in ${where.file}` : ` at ${where.file} line ${where.line}`;
  }
  return `config error: ${key === "" ? "" : `${key}: `}${problem}${location}`;
}
