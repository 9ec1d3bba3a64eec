/**
 * The one error type of configuration loading. Its message is complete on its own (key, problem,
 * file and line) so the CLI prints just the message, never a stack trace. A file with several
 * problems gives one error that lists them all ({@link ConfigError.problems}), one line each.
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
  /**
   * Every problem found, each a one-line error, in file order as far as it is known; the first has
   * this error's key, problem and location. Just this error when it is one problem.
   */
  readonly problems: readonly ConfigError[];

  constructor(
    key: string,
    problem: string,
    where: ConfigErrorLocation = {},
    others: readonly ConfigError[] = [],
  ) {
    super([formatConfigError(key, problem, where), ...others.map((o) => o.message)].join("\n"));
    this.key = key;
    this.problem = problem;
    if (where.file !== undefined) this.file = where.file;
    if (where.line !== undefined) this.line = where.line;
    this.problems = others.length === 0 ? [this] : [new ConfigError(key, problem, where), ...others];
  }

  /** One error for every problem of `list` (not empty); its message has one line per problem. */
  static all(list: readonly ConfigError[]): ConfigError {
    const [first, ...others] = list.flatMap((e) => e.problems);
    if (first === undefined) throw new Error("ConfigError.all needs at least one problem");
    if (others.length === 0) return first;
    const where: ConfigErrorLocation = {
      ...(first.file === undefined ? {} : { file: first.file }),
      ...(first.line === undefined ? {} : { line: first.line }),
    };
    return new ConfigError(first.key, first.problem, where, others);
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
