/**
 * One file of `State.Dir` written so that a crash leaves either the old content or the new, never
 * a part of either: a temporary file beside it (created exclusively, owner-only), written and
 * flushed, renamed over the file, then the directory's entries flushed. The energy checkpoints and
 * the webhooks' undelivered events are kept this way (docs/operations.md).
 */
import { constants } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

let writes = 0;

/** Writes `text` to `file` atomically; on a failure the temporary file is removed and the error thrown. */
export async function writeStateFile(file: string, text: string): Promise<void> {
  const dir = dirname(file);
  const temporary = join(dir, `.${basename(file)}.${process.pid}.${++writes}.tmp`);
  try {
    const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(text, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

/** Flushes a directory's entries (the rename) to the disk; where a system cannot, the rename stands. */
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, constants.O_RDONLY);
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename is then as durable as they make it.
  } finally {
    await handle?.close();
  }
}
