/**
 * The `State.Dir` backend of the energy checkpoints (docs/energy.md, "Checkpoints"): one file,
 * `energy.json`, in a directory the bridge owns. A write goes to a temporary file beside it, is
 * flushed to the disk (fsync), renamed over the file and the directory flushed, so the file is
 * always a whole checkpoint, the old or the new.
 *
 * A file that is not a checkpoint this bridge can read (not JSON, another program's, a newer
 * version's, a value out of bounds) refuses the start with the file named and what to do, and is
 * never overwritten: a bill must not silently restart from zero. Starting fresh on purpose is
 * moving the file away (docs/energy.md says how).
 */
import { mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../config/errors.js";
import { writeStateFile } from "../state-file.js";
import { CheckpointError, checkpointOf, readCheckpoint, type Checkpoint } from "./checkpoint.js";
import type { CheckpointBackend } from "./part.js";

export const STATE_FILE = "energy.json";
/** The largest checkpoint file read (bytes): far above 24,000 outlets' (about 1.5 MB). */
export const MAX_STATE_FILE_BYTES = 64 * 1024 * 1024;

/** What to do about a file that refuses the start. */
const WHAT_TO_DO =
  "stop the bridge, move the file away (keep it: it holds the lifetime counters so far) and start again to begin new counters from the PDUs' own (docs/energy.md, Starting fresh)";

export class StateDir {
  readonly file: string;
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
    this.file = join(dir, STATE_FILE);
  }

  /**
   * The checkpoint in the directory (made when missing), or null when there is none yet; a
   * ConfigError of `State.Dir` naming the file when it cannot be read or is not a checkpoint.
   */
  async load(): Promise<Checkpoint | null> {
    try {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new ConfigError("State.Dir", `${this.#dir} cannot be made or used: ${message(error)}`);
    }
    let text: string;
    try {
      const info = await stat(this.file);
      if (!info.isFile()) throw new ConfigError("State.Dir", `${this.file} is not a file; ${WHAT_TO_DO}`);
      if (info.size > MAX_STATE_FILE_BYTES)
        throw new ConfigError(
          "State.Dir",
          `${this.file} is larger than ${MAX_STATE_FILE_BYTES} bytes: not a checkpoint of this bridge; ${WHAT_TO_DO}`,
        );
      text = await readFile(this.file, "utf8");
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new ConfigError("State.Dir", `${this.file} cannot be read: ${message(error)}`);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new ConfigError(
        "State.Dir",
        `${this.file} is not JSON (a damaged or foreign file); ${WHAT_TO_DO}`,
      );
    }
    try {
      return readCheckpoint(value);
    } catch (error) {
      if (!(error instanceof CheckpointError)) throw error;
      const kind = error.foreign ? "is not an energy checkpoint this bridge can read" : "is damaged";
      throw new ConfigError("State.Dir", `${this.file} ${kind} (${error.message}); ${WHAT_TO_DO}`);
    }
  }

  /** Writes the checkpoint atomically (../state-file.ts). */
  async save(checkpoint: Checkpoint): Promise<number> {
    const text = JSON.stringify(checkpoint);
    await writeStateFile(this.file, text);
    return Buffer.byteLength(text, "utf8");
  }
}

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** `State.Dir` as the energy part's backend: one scope (0), every instance in one file. */
export function stateDirBackend(dir: string, now: () => number = Date.now): CheckpointBackend {
  const state = new StateDir(dir);
  return {
    description: `State.Dir ${state.file}`,
    load: async () => (await state.load())?.instances ?? null,
    save: (_scope, entries) => state.save(checkpointOf(entries, now())),
  };
}
