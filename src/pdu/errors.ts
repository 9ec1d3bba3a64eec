/**
 * Typed failures of talking to a PDU. Every error the client raises is a PduError with a `kind`,
 * so callers map them without string matching: the REST control endpoints turn `timeout` into
 * 504, `refused` into 409 and everything else into 502; the poller records `message` as the
 * instance's `lastError`.
 */

export type PduErrorKind =
  /** Connection refused, reset, DNS failure, TLS failure: no HTTP answer at all. */
  | "unreachable"
  /** No complete answer within the configured Timeout. */
  | "timeout"
  /** HTTP status outside 2xx. */
  | "http-status"
  /** The PDU answered with an error code (Geist: the envelope's retCode was not 0; SNMP: an error-status). */
  | "ret-code"
  /**
   * Nothing was done, and repeating it cannot help: the PDU refused the write (read-only object, no
   * write access) or its family cannot carry the command out on this model. The message says which.
   */
  | "refused"
  /** The body was not JSON, not an envelope, too large, or of the wrong shape. */
  | "malformed"
  /**
   * A write that is not repeated (reboot, reset) failed after its request may have reached the
   * PDU (the connection broke, the answer was unreadable): it may or may not have been carried out.
   */
  | "outcome-unknown";

export class PduError extends Error {
  override readonly name = "PduError";
  readonly kind: PduErrorKind;
  /** HTTP status, when one was received. */
  readonly status: number | undefined;
  /** The PDU's retCode, for `ret-code` errors. */
  readonly retCode: number | undefined;
  /** The PDU's retMsg, for `ret-code` errors. */
  readonly retMsg: string | undefined;
  /**
   * A `refused` the driver decided before sending anything (the family or model cannot carry the
   * write out), not the PDU's own refusal: surfaces say the bridge refused it.
   */
  readonly unsent: boolean;

  constructor(
    kind: PduErrorKind,
    message: string,
    details: { status?: number; retCode?: number; retMsg?: string; cause?: unknown; unsent?: boolean } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = kind;
    this.status = details.status;
    this.retCode = details.retCode;
    this.retMsg = details.retMsg;
    this.unsent = details.unsent === true;
  }
}

/** A write the driver refuses before sending anything (`refused`, {@link PduError.unsent}). */
export function refusedUnsent(message: string): PduError {
  return new PduError("refused", message, { unsent: true });
}

/** A wire tree that cannot be turned into a snapshot. `path` is a JSON path such as `$.dev.X.outlet.3.state`. */
export class ParseError extends PduError {
  readonly path: string;
  readonly problem: string;
  /** `context` names the request (`GET /api from 10.0.0.5:80`) when known. */
  constructor(path: string, problem: string, context?: string) {
    super("malformed", `${context === undefined ? "" : `${context}: `}${path}: ${problem}`);
    this.path = path;
    this.problem = problem;
  }
}

export function isPduError(e: unknown): e is PduError {
  return e instanceof PduError;
}

/**
 * The longest message {@link describeError} gives, in characters: a PDU's retMsg or a name in a
 * JSON path can be as long as its answer, and a message is kept (lastError) and logged.
 */
export const MAX_ERROR_CHARS = 2000;

/**
 * A readable one-line message for any error (for lastError and logs); never a stack trace, cut to
 * {@link MAX_ERROR_CHARS}.
 */
export function describeError(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.length > MAX_ERROR_CHARS
    ? `${message.slice(0, MAX_ERROR_CHARS)}… (${message.length} characters)`
    : message;
}
