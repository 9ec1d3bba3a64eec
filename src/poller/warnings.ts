/**
 * Logs the parse warnings of polled snapshots (malformed optional parts that were dropped, see
 * docs/reliability.md) once per instance and distinct JSON path: a PDU that sends the same odd
 * field on every poll logs it once, not every few seconds. Memory is bounded: at most
 * MAX_LOGGED_PATHS paths are remembered per instance; past that, one line says further warnings
 * of that instance are not logged (they still show in /health/integrations).
 */
import type { Logger } from "../log.js";
import type { Snapshot } from "../pdu/model.js";

export const MAX_LOGGED_PATHS = 256;

export class ParseWarningLog {
  readonly #logger: Logger;
  /** instance id → paths already logged (instances come from the configuration: bounded). */
  readonly #seen = new Map<string, Set<string>>();
  readonly #full = new Set<string>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Logs each warning of `snapshot` whose path was not logged before for this instance. */
  note(instanceId: string, snapshot: Snapshot): void {
    const warnings = snapshot.warnings;
    if (warnings === undefined || warnings.length === 0) return;
    let seen = this.#seen.get(instanceId);
    if (seen === undefined) this.#seen.set(instanceId, (seen = new Set()));
    for (const w of warnings) {
      if (seen.has(w.path)) continue;
      if (seen.size >= MAX_LOGGED_PATHS) {
        if (!this.#full.has(instanceId)) {
          this.#full.add(instanceId);
          this.#logger.warn(
            { instance: instanceId, logged: seen.size },
            "PDU answer: further malformed optional parts of this instance are not logged",
          );
        }
        return;
      }
      seen.add(w.path);
      this.#logger.warn(
        { instance: instanceId, path: w.path, problem: w.problem },
        "PDU answer: malformed optional part dropped, the rest of the snapshot is used",
      );
    }
  }
}
