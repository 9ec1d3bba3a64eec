/**
 * What the bridge's own log (its stdout: pino JSON lines) says about its MQTT connection over a run:
 * protocol errors, other MQTT errors, lost connections and reconnects, messages it dropped, and the
 * retained discovery configs its ghost cleanup cleared. A run as a user sees it has one connect and
 * nothing else.
 */

export interface BridgeLogScan {
  /** `MQTT error` lines whose error is an MQTT protocol error (e.g. an ack for the wrong packet id). */
  readonly protocolErrors: number;
  /** Every other `MQTT error` line (refused, reset, timed out, ...). */
  readonly otherMqttErrors: number;
  /** `MQTT connection lost` lines. */
  readonly connectionsLost: number;
  /** `connected to MQTT broker` lines: 1 in a run without reconnects. */
  readonly connects: number;
  /** Connects after the first. */
  readonly reconnects: number;
  /** `MQTT message dropped` lines (each also counts its message; at most 10 a minute are logged). */
  readonly droppedLines: number;
  /** Sum of `cleared` over the ghost cleanup's lines. */
  readonly ghostsCleared: number;
  /** Lines at level warn, error or fatal. */
  readonly warnings: number;
  /** Lines that are not JSON (a crash's stack, Node's own warnings). */
  readonly otherLines: number;
  /** The first few warn/error lines (and non-JSON lines), shortened, for the report. */
  readonly samples: readonly string[];
}

const SAMPLES = 5;

/** Scans the log text of one bridge run. */
export function scanBridgeLog(text: string): BridgeLogScan {
  let protocolErrors = 0;
  let otherMqttErrors = 0;
  let connectionsLost = 0;
  let connects = 0;
  let droppedLines = 0;
  let ghostsCleared = 0;
  let warnings = 0;
  let otherLines = 0;
  const samples: string[] = [];
  const sample = (line: string) => {
    if (samples.length < SAMPLES) samples.push(line.length > 300 ? `${line.slice(0, 300)}…` : line);
  };
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let entry: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(line);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
        throw new Error("not a record");
      entry = parsed as Record<string, unknown>;
    } catch {
      otherLines++;
      sample(line);
      continue;
    }
    const msg = typeof entry.msg === "string" ? entry.msg : "";
    const level = entry.level;
    if (level === "warn" || level === "error" || level === "fatal") {
      warnings++;
      sample(line);
    }
    if (msg === "MQTT error") {
      if (/protocol error/i.test(JSON.stringify(entry.err ?? ""))) protocolErrors++;
      else otherMqttErrors++;
    } else if (msg.startsWith("MQTT connection lost")) connectionsLost++;
    else if (msg === "connected to MQTT broker") connects++;
    else if (msg.startsWith("MQTT message dropped")) droppedLines++;
    else if (msg.startsWith("cleared retained discovery configs") && typeof entry.cleared === "number")
      ghostsCleared += entry.cleared;
  }
  return {
    protocolErrors,
    otherMqttErrors,
    connectionsLost,
    connects,
    reconnects: Math.max(0, connects - 1),
    droppedLines,
    ghostsCleared,
    warnings,
    otherLines,
    samples,
  };
}

/** Protocol errors, other MQTT errors, lost connections and reconnects: 0 in a clean run. */
export function connectionTrouble(scan: BridgeLogScan): number {
  return scan.protocolErrors + scan.otherMqttErrors + scan.connectionsLost + scan.reconnects;
}

/** `2 protocol errors, 1 connection lost, 1 reconnect` (only what happened), or `none`. */
export function describeTrouble(scan: BridgeLogScan): string {
  const parts: string[] = [];
  const add = (n: number, one: string, many: string) => {
    if (n > 0) parts.push(`${n} ${n === 1 ? one : many}`);
  };
  add(scan.protocolErrors, "protocol error", "protocol errors");
  add(scan.otherMqttErrors, "other MQTT error", "other MQTT errors");
  add(scan.connectionsLost, "connection lost", "connections lost");
  add(scan.reconnects, "reconnect", "reconnects");
  if (scan.connects === 0) parts.push("never connected");
  return parts.length === 0 ? "none" : parts.join(", ");
}
