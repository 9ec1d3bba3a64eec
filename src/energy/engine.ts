/**
 * The coordination engine as the energy part's backend among several replicas (docs/energy.md,
 * "Checkpoints"): one record per bucket holding the checkpoint of the bucket's instances, written
 * by the bucket's holder and read by a new holder before it publishes. The record's payload is the
 * checkpoint's JSON, deflated and in base64, so that a bucket of thousands of outlets stays small
 * (docs/energy.md, "Sizes").
 *
 * What another replica (or anyone with access to the engine) wrote is untrusted: it is inflated
 * within a bound and checked whole (./checkpoint.ts) before any counter is taken from it.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { CheckpointError, checkpointOf, readCheckpoint } from "./checkpoint.js";
import type { CheckpointBackend } from "./part.js";

/** The largest checkpoint inflated from a record (bytes of JSON). */
export const MAX_RECORD_JSON_BYTES = 16 * 1024 * 1024;

/** What the energy part needs of the coordination engine's per-bucket records (src/cluster/records.ts). */
export interface BucketRecordStore {
  readonly description: string;
  read(bucket: number): Promise<string | null>;
  write(bucket: number, payload: string): Promise<void>;
}

/** The checkpoint of a bucket as a record's payload. */
export function encodeRecord(json: string): string {
  return deflateRawSync(Buffer.from(json, "utf8"), { level: 6 }).toString("base64");
}

/** A record's payload as the checkpoint's JSON value; throws {@link CheckpointError}. */
export function decodeRecord(payload: string): unknown {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(payload)) throw new CheckpointError("$", "is not base64", true);
  let json: string;
  try {
    json = inflateRawSync(Buffer.from(payload, "base64"), {
      maxOutputLength: MAX_RECORD_JSON_BYTES,
    }).toString("utf8");
  } catch {
    throw new CheckpointError("$", "is not a deflated checkpoint (or inflates beyond its bound)", true);
  }
  try {
    return JSON.parse(json);
  } catch {
    throw new CheckpointError("$", "is not JSON", true);
  }
}

export function engineBackend(records: BucketRecordStore, now: () => number = Date.now): CheckpointBackend {
  return {
    description: `the coordination engine (${records.description})`,
    async load(bucket) {
      const payload = await records.read(bucket);
      if (payload === null || payload === "") return null;
      return readCheckpoint(decodeRecord(payload)).instances;
    },
    async save(bucket, entries) {
      const payload = encodeRecord(JSON.stringify(checkpointOf(entries, now())));
      await records.write(bucket, payload);
      return payload.length;
    },
  };
}
