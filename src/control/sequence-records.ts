/**
 * Where a sequence's journal is kept (src/assets/journal.ts has the records and the rules): named
 * text records, each changed only by a writer naming the version it last read. Among several
 * replicas the records are in the coordination engine (src/cluster/journal-store.ts, behind the
 * lease seam), so another replica can resume a sequence whose runner died; in one process they are
 * kept in memory ({@link MemoryRecords}), and a sequence ends with the process.
 */

export interface StoredRecord {
  readonly text: string;
  /** Opaque, compared for equality only and named by every conditional write. */
  readonly version: string;
}

/** A conditional write's answer: the record as written, or `conflict` (another version, or it exists). */
export type RecordWrite = StoredRecord | "conflict";

export interface SequenceRecords {
  /** This process as a head's `runner` names it (`<member>/<incarnation>` among replicas, `local`). */
  readonly identity: string;
  /** The longest record text the store takes (characters), or null for no limit. */
  readonly maxRecord: number | null;
  /** The record, or null when there is none. Throws when the store cannot be asked. */
  get(name: string, signal: AbortSignal): Promise<StoredRecord | null>;
  /** Creates it; `conflict` when it exists. */
  create(name: string, text: string, signal: AbortSignal): Promise<RecordWrite>;
  /** Replaces it if its version is still `version`; `conflict` otherwise. */
  update(name: string, text: string, version: string, signal: AbortSignal): Promise<RecordWrite>;
  /** Deletes it if its version is still `version` (nothing when it is gone). */
  remove(name: string, version: string, signal: AbortSignal): Promise<void>;
  /** Every record name, with the versions (a resume looks for heads whose runner died). */
  names(signal: AbortSignal): Promise<readonly string[]>;
  /** Whether the runner a head names is alive (its member lease as last seen; `local` always). */
  alive(runner: string): boolean;
}

/** Records kept in this process (one process: nobody else resumes). */
export class MemoryRecords implements SequenceRecords {
  readonly identity = "local";
  readonly maxRecord = null;
  readonly #records = new Map<string, StoredRecord>();
  #next = 0;

  get(name: string): Promise<StoredRecord | null> {
    return Promise.resolve(this.#records.get(name) ?? null);
  }

  create(name: string, text: string): Promise<RecordWrite> {
    if (this.#records.has(name)) return Promise.resolve("conflict");
    return Promise.resolve(this.#put(name, text));
  }

  update(name: string, text: string, version: string): Promise<RecordWrite> {
    if (this.#records.get(name)?.version !== version) return Promise.resolve("conflict");
    return Promise.resolve(this.#put(name, text));
  }

  remove(name: string, version: string): Promise<void> {
    if (this.#records.get(name)?.version === version) this.#records.delete(name);
    return Promise.resolve();
  }

  names(): Promise<readonly string[]> {
    return Promise.resolve([...this.#records.keys()]);
  }

  alive(runner: string): boolean {
    return runner === this.identity;
  }

  #put(name: string, text: string): StoredRecord {
    const record = { text, version: String(++this.#next) };
    this.#records.set(name, record);
    return record;
  }
}
