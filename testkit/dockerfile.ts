/**
 * A small Dockerfile reader for tests (no container engine in CI): instructions grouped by stage,
 * line continuations joined, comments dropped. Enough for the repository's own Dockerfile.
 */

export interface Instruction {
  /** Upper-cased: FROM, RUN, COPY... */
  readonly keyword: string;
  /** Everything after the keyword, continuation lines joined with a space. */
  readonly args: string;
  /** 1-based line the instruction starts on. */
  readonly line: number;
}

export interface Stage {
  readonly image: string;
  /** The `AS` name, if any. */
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  let pending: { text: string; line: number } | null = null;
  const finish = (joined: string, line: number) => {
    const match = /^(\S+)\s*(.*)$/s.exec(joined.trim());
    if (match === null) return;
    const keyword = match[1]!.toUpperCase();
    const args = match[2]!.trim();
    if (keyword === "FROM") {
      const [image, as, name] = args.split(/\s+/);
      stages.push({ image: image!, name: as?.toUpperCase() === "AS" ? name : undefined, instructions: [] });
    }
    const stage = stages.at(-1);
    if (stage === undefined) {
      if (keyword === "ARG") return; // ARGs before the first FROM
      throw new Error(`line ${line}: ${keyword} before FROM`);
    }
    stage.instructions.push({ keyword, args, line });
  };
  text.split("\n").forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith("#") || (trimmed === "" && pending === null)) return;
    const continues = trimmed.endsWith("\\");
    const part = continues ? trimmed.slice(0, -1) : trimmed;
    pending =
      pending === null ? { text: part, line: index + 1 } : { ...pending, text: `${pending.text} ${part}` };
    if (!continues) {
      finish(pending.text, pending.line);
      pending = null;
    }
  });
  if (pending !== null) throw new Error("the Dockerfile ends inside a continued line");
  return stages;
}

/** The arguments of an exec-form instruction (`["node", "x.js"]`); undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith("[")) return undefined;
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === "string")) {
    throw new Error(`not a JSON array of strings: ${args}`);
  }
  return parsed;
}

/** `--from=x`-style flags and the remaining words of a COPY/HEALTHCHECK line. */
export function splitFlags(args: string): { flags: Map<string, string>; rest: string } {
  const flags = new Map<string, string>();
  let rest = args;
  for (let m = /^--([a-z-]+)=(\S+)\s*/.exec(rest); m !== null; m = /^--([a-z-]+)=(\S+)\s*/.exec(rest)) {
    flags.set(m[1]!, m[2]!);
    rest = rest.slice(m[0].length);
  }
  return { flags, rest };
}

/** `ENV A=1 B=2` (or the old `ENV A 1`) as a map. */
export function envPairs(args: string): Map<string, string> {
  const pairs = new Map<string, string>();
  if (!args.includes("=")) {
    const [name, ...value] = args.split(/\s+/);
    pairs.set(name!, value.join(" "));
    return pairs;
  }
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) {
    pairs.set(m[1]!, m[2]!.replace(/^"(.*)"$/, "$1"));
  }
  return pairs;
}

/** The `ARG NAME=default` lines before the first FROM (the ones FROM lines may use), as a map. */
export function globalArgs(text: string): Map<string, string | undefined> {
  const args = new Map<string, string | undefined>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (/^FROM\s/i.test(line)) break;
    const match = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?\s*$/i.exec(line);
    if (match !== null) args.set(match[1]!, match[2]?.replace(/^"(.*)"$/, "$1"));
  }
  return args;
}

/** `${NAME}` and `$NAME` in `text` replaced from `args` (an unknown name throws). */
export function substituteArgs(text: string, args: ReadonlyMap<string, string | undefined>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_, braced, bare) => {
    const name = (braced ?? bare) as string;
    const value = args.get(name);
    if (value === undefined) throw new Error(`the Dockerfile uses \${${name}} without a default`);
    return value;
  });
}
