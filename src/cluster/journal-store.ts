/**
 * The sequences' journal in the coordination engine (docs/assets.md "Sequences"): named text
 * records changed only by a writer naming the version it last read, on a lease store of their own
 * beside the leases (engines.ts, `journal`: the elector never lists or watches them). A record is a
 * lease record whose payload is the text and whose holder is the replica that wrote it last. It is
 * the `SequenceRecords` of src/control/sequence-records.ts (this library imports nothing of
 * control: the composition root hands it over).
 */
import { LeaseConflictError, type LeaseRecord, type LeaseStore } from "./store.js";

/** What the journal needs of the cluster: this process, and who is alive. */
export interface JournalCluster {
  readonly identity: string;
  identityOf(member: string): string | null;
}

export class JournalStore {
  readonly identity: string;
  readonly maxRecord: number;
  readonly #store: LeaseStore;
  readonly #cluster: JournalCluster;

  constructor(store: LeaseStore, cluster: JournalCluster, maxRecord: number) {
    this.#store = store;
    this.#cluster = cluster;
    this.identity = cluster.identity;
    this.maxRecord = maxRecord;
  }

  #record(text: string): LeaseRecord {
    return {
      holder: this.identity,
      durationSeconds: 0,
      acquireTime: null,
      renewTime: new Date().toISOString(),
      transitions: 0,
      payload: text,
    };
  }

  /** The record; a record this service cannot read has the text "" (which no journal parser takes). */
  async get(name: string, signal: AbortSignal): Promise<{ text: string; version: string } | null> {
    const lease = await this.#store.get(name, signal);
    return lease === null ? null : { text: lease.record?.payload ?? "", version: lease.version };
  }

  async create(
    name: string,
    text: string,
    signal: AbortSignal,
  ): Promise<{ text: string; version: string } | "conflict"> {
    try {
      const lease = await this.#store.create(name, this.#record(text), signal);
      return { text, version: lease.version };
    } catch (error) {
      if (error instanceof LeaseConflictError) return "conflict";
      throw error;
    }
  }

  async update(
    name: string,
    text: string,
    version: string,
    signal: AbortSignal,
  ): Promise<{ text: string; version: string } | "conflict"> {
    try {
      const lease = await this.#store.update(name, this.#record(text), version, signal);
      return { text, version: lease.version };
    } catch (error) {
      if (error instanceof LeaseConflictError) return "conflict";
      throw error;
    }
  }

  async remove(name: string, version: string, signal: AbortSignal): Promise<void> {
    try {
      await this.#store.delete(name, version, signal);
    } catch (error) {
      if (!(error instanceof LeaseConflictError)) throw error;
    }
  }

  async names(signal: AbortSignal): Promise<readonly string[]> {
    return (await this.#store.list(signal)).leases.map((l) => l.name);
  }

  /** The runner's member lease holds the runner's identity as last seen (this process: always). */
  alive(runner: string): boolean {
    if (runner === this.identity) return true;
    const member = runner.split("/")[0] ?? "";
    return member !== "" && this.#cluster.identityOf(member) === runner;
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
