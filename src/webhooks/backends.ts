/**
 * Where the webhooks part keeps each scope's state (./state.ts): `State.Dir` in one process (one
 * file, `webhooks.json`, written atomically: a temporary file, fsync, rename, fsync of the
 * directory), or the coordination engine among replicas (a record per bucket beside the leases,
 * `webhooks-<bucket>`, deflated and in base64 as the energy checkpoints are).
 */
import { mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { ConfigError } from "../config/errors.js";
import { writeStateFile } from "../state-file.js";
import { readSaved, SavedError, type Saved } from "./state.js";

export interface ScopeBackend {
  readonly description: string;
  /** The scope's state, or null when none was kept. */
  load(scope: number): Promise<Saved | null>;
  /** Keeps the scope's state; returns how many of its oldest events did not fit (0: all kept). */
  save(scope: number, saved: Saved): Promise<number>;
}

export const STATE_FILE = "webhooks.json";
const MAX_FILE_BYTES = 256 * 1024 * 1024;

/** `State.Dir`: every scope in one file (one process has scope 0 only). */
export function stateDirBackend(dir: string): ScopeBackend {
  const file = join(dir, STATE_FILE);
  const refuse = (why: string) =>
    new ConfigError(
      "State.Dir",
      `${file} ${why}; stop the bridge and move the file away (it holds the webhook events not yet delivered) to start without them`,
    );
  return {
    description: `State.Dir ${file}`,
    async load() {
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        const info = await stat(file);
        if (!info.isFile() || info.size > MAX_FILE_BYTES)
          throw refuse("is not a webhooks state of this bridge");
        return readSaved(JSON.parse(await readFile(file, "utf8")));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
        if (error instanceof ConfigError) throw error;
        if (error instanceof SavedError) throw refuse(error.message);
        if (error instanceof SyntaxError) throw refuse("is not JSON (a damaged or foreign file)");
        throw refuse(`cannot be read (${error instanceof Error ? error.message : String(error)})`);
      }
    },
    async save(_scope, saved) {
      await writeStateFile(file, JSON.stringify(saved));
      return 0;
    },
  };
}

/** What the part needs of the engine's per-bucket records (src/cluster/records.ts). */
export interface BucketRecordStore {
  readonly description: string;
  read(bucket: number): Promise<string | null>;
  write(bucket: number, payload: string): Promise<void>;
}

/** The largest state inflated from a record (bytes of JSON). */
const MAX_RECORD_JSON = 32 * 1024 * 1024;

/**
 * The coordination engine: a record per bucket of at most `maxPayload` characters. A state that
 * does not fit keeps its newest events that do (the rest stay in this replica's memory only).
 */
export function engineBackend(records: BucketRecordStore, maxPayload: number): ScopeBackend {
  return {
    description: `the coordination engine (${records.description})`,
    async load(bucket) {
      const payload = await records.read(bucket);
      if (payload === null || payload === "") return null;
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(payload)) throw new SavedError("is not base64");
      let json: string;
      try {
        json = inflateRawSync(Buffer.from(payload, "base64"), { maxOutputLength: MAX_RECORD_JSON }).toString(
          "utf8",
        );
      } catch {
        throw new SavedError("is not deflated (or inflates beyond its bound)");
      }
      return readSaved(JSON.parse(json));
    },
    async save(bucket, saved) {
      let events = saved.events;
      for (;;) {
        const payload = deflateRawSync(Buffer.from(JSON.stringify({ ...saved, events }), "utf8")).toString(
          "base64",
        );
        if (payload.length <= maxPayload || events.length === 0) {
          await records.write(bucket, payload);
          return saved.events.length - events.length;
        }
        events = events.slice(Math.max(1, Math.floor(events.length / 10)));
      }
    },
  };
}
