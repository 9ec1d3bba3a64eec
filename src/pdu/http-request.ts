/**
 * One HTTP request to a PDU over an undici dispatcher, its answer collected straight from the
 * dispatch handler's callbacks (undici's `Dispatcher.dispatch`).
 *
 * Not undici's `request()`: for every answer it builds a readable stream of the body, which the
 * caller then reads through an async iterator, a promise per chunk and the stream's end-of-stream
 * and destroy machinery, and it follows an AbortSignal; at a thousand PDUs polled every 10 s that
 * machinery is a large share of the bridge's CPU when no value changes (docs/performance.md). Here
 * an answer is its status and its body's chunks, gathered by one handler object, which is also the
 * request's timer argument and its listener on the caller's signal: no AbortController, no
 * closures, and nothing left attached to a long-lived signal once the exchange settled (the
 * poller's and control's signals live as long as the service; docs/reliability.md, "The leak the
 * soak found").
 */
import { setMaxListeners } from "node:events";
import type { Dispatcher } from "undici";

export interface ExchangeRequest {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | undefined;
  /** The largest body read; a bigger one (declared or as it arrives) fails with {@link AnswerTooLarge}. */
  readonly maxBodyBytes: number;
  /** The whole exchange's deadline, connecting included. */
  readonly timeoutMs: number;
  /** The caller's signal: when it aborts, the exchange fails with its reason. */
  readonly signal: AbortSignal | undefined;
  /** Ask for the connection to be closed after this answer (`Connection: close`) instead of kept. */
  readonly close?: boolean;
}

/** An answer: its status and, for a 2xx, its body in the chunks it came in (empty otherwise: not read). */
export interface ExchangeAnswer {
  readonly status: number;
  readonly chunks: readonly Buffer[];
}

/** The answer's body is larger than the request's `maxBodyBytes`; its connection was closed. */
export class AnswerTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`answer larger than ${limit} bytes`);
  }
}

/** Why an exchange is aborted when it failed by its deadline (the caller sees {@link Exchange.timedOut}). */
class DeadlinePassed extends Error {
  constructor(ms: number) {
    super(`no complete answer within ${ms} ms`);
  }
}

/** The reason given to undici when a non-2xx answer's body is left unread. */
const DISCARDED = new Error("answer discarded");

function is2xx(status: number): boolean {
  return status >= 200 && status <= 299;
}

/**
 * One exchange: {@link run} sends it and settles with the answer or the failure. Failures are
 * undici's transport errors as they come (their codes tell what happened), the caller's signal's
 * reason, a {@link DeadlinePassed} with {@link timedOut} set, or an {@link AnswerTooLarge}.
 */
export class Exchange implements Dispatcher.DispatchHandler {
  /** The deadline passed before the exchange settled. */
  timedOut = false;
  /** The answer's status once its head arrived; undefined before (nothing was answered). */
  status: number | undefined = undefined;
  readonly #request: ExchangeRequest;
  #controller: Dispatcher.DispatchController | null = null;
  /** Why the exchange was ended before undici handed over its controller, to abort it with then. */
  #pendingAbort: Error | null = null;
  readonly #chunks: Buffer[] = [];
  #bytes = 0;
  #settled = false;
  #resolve: (answer: ExchangeAnswer) => void = noop;
  #reject: (error: unknown) => void = noop;
  #timer: NodeJS.Timeout | null = null;

  constructor(request: ExchangeRequest) {
    this.#request = request;
  }

  /** Sends the request over `dispatcher`; call once. */
  run(dispatcher: Dispatcher): Promise<ExchangeAnswer> {
    const { signal } = this.#request;
    const done = new Promise<ExchangeAnswer>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    if (signal?.aborted === true) {
      this.#settled = true;
      this.#reject(signal.reason);
      return done;
    }
    if (signal !== undefined) {
      // A long-lived signal carries one listener per exchange in flight (one per instance polling at
      // once): more than EventTarget's default of 10 is expected, and every one is removed again.
      setMaxListeners(0, signal);
      signal.addEventListener("abort", this, { once: true });
    }
    this.#timer = setTimeout(expire, this.#request.timeoutMs, this);
    const { method, path, headers, body, close = false } = this.#request;
    dispatcher.dispatch({ method, path, headers, body: body ?? null, reset: close }, this);
    return done;
  }

  /** The caller's signal aborted (EventListener object form). */
  handleEvent(): void {
    this.#fail(this.#request.signal?.reason, true);
  }

  /** The deadline passed. */
  expire(): void {
    if (this.#settled) return;
    this.timedOut = true;
    this.#fail(new DeadlinePassed(this.#request.timeoutMs), true);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#pendingAbort !== null) controller.abort(this.#pendingAbort);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // An informational answer (1xx) comes before the real one, as undici's request() ignores it.
    if (this.#settled || statusCode < 200) return;
    this.status = statusCode;
    if (!is2xx(statusCode)) {
      this.#settle();
      this.#resolve({ status: statusCode, chunks: [] });
      controller.abort(DISCARDED);
      return;
    }
    if (Number(headers["content-length"]) > this.#request.maxBodyBytes) {
      this.#fail(new AnswerTooLarge(this.#request.maxBodyBytes), true);
    }
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#bytes += chunk.length;
    if (this.#bytes > this.#request.maxBodyBytes) {
      this.#fail(new AnswerTooLarge(this.#request.maxBodyBytes), true);
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    this.#settle();
    this.#resolve({ status: this.status ?? 0, chunks: this.#chunks });
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.#fail(error, false);
  }

  /** Settles with `error`; `abort`: and ends the request (at once, or as soon as undici starts it). */
  #fail(error: unknown, abort: boolean): void {
    if (this.#settled) return;
    this.#settle();
    this.#reject(error);
    if (!abort) return;
    const reason = error instanceof Error ? error : new Error(String(error));
    if (this.#controller !== null) this.#controller.abort(reason);
    else this.#pendingAbort = reason;
  }

  /** Marks the exchange settled: stops the timer and detaches from the caller's signal. */
  #settle(): void {
    this.#settled = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#request.signal?.removeEventListener("abort", this);
  }
}

function expire(exchange: Exchange): void {
  exchange.expire();
}

function noop(): void {}
