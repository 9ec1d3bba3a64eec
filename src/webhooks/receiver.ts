/**
 * One webhook receiver (docs/events.md, Webhooks): its queue of undelivered events, in order, and
 * the loop that delivers the head. A non-2xx answer or a delivery past `Timeout` is retried after
 * a wait that starts at 1 s and doubles up to `RetryMaxDelay`; the head blocks this receiver's
 * queue only (every receiver has its own loop and connection pool). At most `MaxQueue` events are
 * kept: a new one beyond it drops the oldest, counted.
 *
 * What a receiver answers is untrusted: only its status is read; its body is discarded within a
 * bound of size and time and never logged; a redirect is a non-2xx answer (not followed).
 */
import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import tls from "node:tls";
import { ConfigError } from "../config/errors.js";
import { Agent, request } from "undici";
import type { Logger } from "../log.js";
import type { WebhookEvent, WebhookKind } from "./events.js";
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signature } from "./signing.js";

/** The first wait before a retry (ms). */
export const FIRST_RETRY_MS = 1000;
/** The most of an answer's body read (and discarded), in bytes. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** An event in a receiver's queue: the scope it is kept in (a bucket; 0 in one process). */
export interface QueuedEvent {
  readonly event: WebhookEvent;
  readonly scope: number;
}

export interface ReceiverOptions {
  /** The label of metrics, health and logs: `Name`, else the position. */
  readonly label: string;
  readonly url: string;
  readonly secret: string;
  readonly kinds: ReadonlySet<WebhookKind>;
  readonly timeoutMs: number;
  readonly maxDelayMs: number;
  readonly maxQueue: number;
  /** A PEM file of certificate authorities trusted for this receiver besides the system's, or null. */
  readonly caFile: string | null;
  readonly logger: Logger;
  /** Whether the head may be sent now (its scope held here and written where it is kept). */
  readonly sendable: (queued: QueuedEvent) => boolean;
  /** The receiver acknowledged it (2xx), or it was dropped from the full queue. */
  readonly done: (queued: QueuedEvent, outcome: "delivered" | "dropped", receiver: string) => void;
}

export type ReceiverState = "idle" | "delivering" | "failing";

export interface ReceiverStatus {
  readonly receiver: string;
  /** The URL's host (never its path or query, which may hold a token). */
  readonly host: string;
  readonly state: ReceiverState;
  readonly queued: number;
  readonly delivered: number;
  readonly failed: number;
  readonly dropped: number;
  /** The last failure (`HTTP 503`, `timeout after 5 s`, a connection error), null once delivered again. */
  readonly lastError: string | null;
  readonly lastDeliveredAt: number | null;
}

export class Receiver {
  readonly label: string;
  readonly kinds: ReadonlySet<WebhookKind>;
  readonly #options: ReceiverOptions;
  readonly #host: string;
  #agent: Agent | null = null;
  #queue: QueuedEvent[] = [];
  readonly #stop = new AbortController();
  #wake: (() => void) | null = null;
  #loop: Promise<void> | null = null;
  #delivered = 0;
  #failed = 0;
  #dropped = 0;
  #lastError: string | null = null;
  #lastDeliveredAt: number | null = null;
  #failingSince: number | null = null;

  constructor(options: ReceiverOptions) {
    this.#options = options;
    this.label = options.label;
    this.kinds = options.kinds;
    this.#host = new URL(options.url).host;
  }

  /** Reads the CA file (a ConfigError naming its key when it cannot be read) and starts delivering. */
  async start(index: number): Promise<void> {
    const { caFile, timeoutMs: timeout } = this.#options;
    let ca: string | null = null;
    if (caFile !== null) {
      try {
        ca = await readFile(caFile, "utf8");
      } catch (error) {
        throw new ConfigError(
          `Webhooks.${index}.CaFile`,
          `cannot read ${caFile} (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        );
      }
    }
    this.#agent = new Agent({
      connect: { timeout, ...(ca === null ? {} : { ca: [...tls.rootCertificates, ca] }) },
      headersTimeout: timeout,
      bodyTimeout: timeout,
      connections: 2,
    });
    this.#loop ??= this.#run().catch((error: unknown) => {
      this.#options.logger.error({ err: error, receiver: this.label }, "webhook delivery loop ended");
    });
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#wake?.();
    await this.#loop;
    await this.#agent?.close().catch(() => undefined);
  }

  /** Adds an event at the tail; drops the oldest beyond `MaxQueue` (never the head in flight). */
  enqueue(queued: QueuedEvent): void {
    this.#queue.push(queued);
    while (this.#queue.length > this.#options.maxQueue) {
      const at = this.#inFlight !== null && this.#queue[0] === this.#inFlight ? 1 : 0;
      const [dropped] = this.#queue.splice(at, 1);
      if (dropped === undefined) break;
      this.#dropped++;
      this.#options.done(dropped, "dropped", this.label);
    }
    this.poke();
  }

  /** Whether an event of this id waits here. */
  has(id: string): boolean {
    return this.#queue.some((q) => q.event.id === id);
  }

  /** Forgets the events of a scope given up (its next holder delivers them). */
  removeScope(scope: number): void {
    this.#queue = this.#queue.filter((q) => q.scope !== scope);
  }

  /** The head may have become sendable: look again. */
  poke(): void {
    this.#wake?.();
  }

  get depth(): number {
    return this.#queue.length;
  }

  status(): ReceiverStatus {
    return {
      receiver: this.label,
      host: this.#host,
      state: this.#failingSince !== null ? "failing" : this.#queue.length > 0 ? "delivering" : "idle",
      queued: this.#queue.length,
      delivered: this.#delivered,
      failed: this.#failed,
      dropped: this.#dropped,
      lastError: this.#lastError,
      lastDeliveredAt: this.#lastDeliveredAt,
    };
  }

  #inFlight: QueuedEvent | null = null;

  async #run(): Promise<void> {
    let delay = Math.min(FIRST_RETRY_MS, this.#options.maxDelayMs);
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const head = this.#queue[0];
      if (head === undefined || !this.#options.sendable(head)) {
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = null;
        continue;
      }
      this.#inFlight = head;
      const failure = await this.#attempt(head.event);
      this.#inFlight = null;
      if (failure === null) {
        delay = Math.min(FIRST_RETRY_MS, this.#options.maxDelayMs);
        this.#succeeded(head);
        continue;
      }
      if (signal.aborted) return;
      this.#failedOnce(failure);
      await sleep(delay, undefined, { signal }).catch(() => undefined);
      delay = Math.min(delay * 2, this.#options.maxDelayMs);
    }
  }

  #succeeded(head: QueuedEvent): void {
    const at = this.#queue.indexOf(head);
    if (at >= 0) this.#queue.splice(at, 1);
    this.#delivered++;
    this.#lastDeliveredAt = Date.now();
    this.#lastError = null;
    if (this.#failingSince !== null) {
      this.#options.logger.info(
        { receiver: this.label, host: this.#host, queued: this.#queue.length },
        `webhook receiver ${this.label} takes events again`,
      );
      this.#failingSince = null;
    }
    this.#options.done(head, "delivered", this.label);
  }

  #failedOnce(failure: string): void {
    this.#failed++;
    this.#lastError = failure;
    if (this.#failingSince === null) {
      this.#failingSince = Date.now();
      this.#options.logger.warn(
        { receiver: this.label, host: this.#host, error: failure, queued: this.#queue.length },
        `webhook receiver ${this.label} does not take events (${failure}): retrying with backoff, in order`,
      );
    }
  }

  /** One delivery: null when the receiver answered 2xx, else what went wrong (no body, no URL). */
  async #attempt(event: WebhookEvent): Promise<string | null> {
    const { timeoutMs, secret, url } = this.#options;
    // One controller per attempt, ended by the deadline or the receiver's stop; both let go after
    // it, so that nothing accumulates on the stop signal over millions of attempts.
    const attempt = new AbortController();
    const signal = attempt.signal;
    const timer = setTimeout(() => attempt.abort(), timeoutMs);
    const stop = (): void => attempt.abort();
    this.#stop.signal.addEventListener("abort", stop, { once: true });
    const t = Math.floor(Date.now() / 1000);
    try {
      const answer = await request(url, {
        method: "POST",
        dispatcher: this.#agent ?? undefined,
        signal,
        body: event.body,
        headers: {
          "content-type": "application/json",
          "user-agent": "pdu-bridge",
          [EVENT_ID_HEADER]: event.id,
          [SIGNATURE_HEADER]: signature(secret, t, event.body),
        },
      });
      // The body is read only to free the connection, within a bound; the status is the answer.
      await answer.body.dump({ limit: MAX_ANSWER_BYTES, signal }).catch(() => undefined);
      const status = answer.statusCode;
      return status >= 200 && status < 300 ? null : `HTTP ${status}`;
    } catch (error) {
      if (signal.aborted && !this.#stop.signal.aborted) return `no answer within ${timeoutMs / 1000} s`;
      return this.#describe(error);
    } finally {
      clearTimeout(timer);
      this.#stop.signal.removeEventListener("abort", stop);
    }
  }

  /** An error's message with the URL (which may hold a token) replaced by its host. */
  #describe(error: unknown): string {
    const code = (error as { code?: unknown }).code;
    const text = error instanceof Error ? error.message : String(error);
    const clean = text.split(this.#options.url).join(this.#host).slice(0, 200);
    return typeof code === "string" && !clean.includes(code) ? `${clean} (${code})` : clean;
  }
}
