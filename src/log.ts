/**
 * Logging: pino with every secret-bearing path redacted. Secrets are also kept out of log calls by
 * construction (nothing logs a config object whole), the redaction is the second line of defence.
 */
import { pino, type Logger, type DestinationStream } from "pino";

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
