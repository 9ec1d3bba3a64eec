/**
 * Faults no input can cause, injected into a running bridge by the tests of the process-level safety
 * net and of the API worker's heartbeat. Preloaded with `node --import <this file's URL>
 * dist/src/main.js` (node runs it in the main thread and in every worker thread started from a
 * file); inert unless `PDU_BRIDGE_TEST_INJECT` names a directory. A file appearing there triggers
 * its fault once (the file is removed first):
 *
 * - `reject` (main thread): a promise rejected with no handler;
 * - `throw` (main thread): an exception thrown from a timer callback, which nothing catches;
 * - `stall-worker` (a worker thread): the thread blocks for good, as a hung API worker would (it
 *   answers nothing, heartbeats included, until it is terminated).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { isMainThread } from "node:worker_threads";

export const INJECT_DIR_VARIABLE = "PDU_BRIDGE_TEST_INJECT";

const dir = process.env[INJECT_DIR_VARIABLE];

/** Whether the trigger file `name` was there (and is gone now). */
function take(name: string): boolean {
  try {
    rmSync(join(dir!, name));
    return true;
  } catch {
    return false;
  }
}

if (dir !== undefined && dir !== "") {
  const timer = setInterval(() => {
    if (isMainThread) {
      if (take("reject")) void Promise.reject(new Error("injected rejection"));
      if (take("throw"))
        setImmediate(() => {
          throw new Error("injected exception");
        });
    } else if (take("stall-worker")) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    }
  }, 50);
  timer.unref();
}
