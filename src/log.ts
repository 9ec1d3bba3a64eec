/**
 * Logging: pino with every secret-bearing path redacted. Secrets are also kept out of log calls by
 * construction (nothing logs a config object whole), the redaction is the second line of defence.
 */
import { pino, type Logger, type DestinationStream } from "pino";
import { Writable } from "node:stream";

export type { Logger };

export const REDACT_PATHS = [
  "password",
  "Password",
  "token",
  "apiKey",
  "ApiKey",
  "*.password",
  "*.Password",
  "*.token",
  "*.apiKey",
  "*.ApiKey",
  "*.*.Password",
  "*.*.ApiKey",
  'headers["x-api-key"]',
  'req.headers["x-api-key"]',
  'request.headers["x-api-key"]',
  "req.headers.authorization",
  "ClientSecret",
  "*.ClientSecret",
  "*.*.ClientSecret",
  "headers.cookie",
  "req.headers.cookie",
];

export interface LoggerOptions {
  level?: string;
  /** Where lines go (default stdout). Tests pass a stream to capture and scan every line. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      name: "pdu-bridge",
      level: options.level ?? "info",
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

/** A logger that drops everything (for library use and tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/** Fields every line has, which a reader of {@link readableLines} does not need to see. */
const ROUTINE_FIELDS = new Set(["level", "time", "pid", "hostname", "name", "msg"]);

/**
 * Log lines for a person at a terminal (the demo): `12:03:07 warn  poll failed (instance=default …)`
 * instead of JSON. The service itself always logs JSON, for log collectors.
 */
export function readableLines(out: (text: string) => void): DestinationStream {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line === "") continue;
        out(`${readableLine(line)}\n`);
      }
      done();
    },
  });
}

function readableLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof record.time === "string" ? record.time.slice(11, 19) : "";
  const level = typeof record.level === "string" ? record.level.padEnd(5) : "";
  const fields = Object.entries(record)
    .filter(([key]) => !ROUTINE_FIELDS.has(key))
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  const message = typeof record.msg === "string" ? record.msg : "";
  return `${time} ${level} ${message}${fields.length > 0 ? ` (${fields.join(" ")})` : ""}`;
}
