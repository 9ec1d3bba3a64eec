/**
 * Reading an HTTP answer's body with a size limit: the etcd client and the replicas' forwarding
 * read every answer this way, so no peer can make this process buffer more than it expects.
 */

/** An answer's body was larger than its reader's limit (the rest was not read). */
export class BodyTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`the answer exceeds ${limit} bytes`);
    this.name = "BodyTooLargeError";
    this.limit = limit;
  }
}

/** A body stream that can be given up (undici's answer bodies). */
interface Body extends AsyncIterable<Uint8Array> {
  destroy?(error?: Error): unknown;
}

/**
 * The whole body, at most `limit` bytes: throws {@link BodyTooLargeError} as soon as more arrive
 * (and gives the stream up), or the stream's own error.
 */
export async function readBounded(body: Body, limit: number): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      const error = new BodyTooLargeError(limit);
      body.destroy?.(error);
      throw error;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** {@link readBounded} as UTF-8 text. */
export async function readBoundedText(body: Body, limit: number): Promise<string> {
  return (await readBounded(body, limit)).toString("utf8");
}
