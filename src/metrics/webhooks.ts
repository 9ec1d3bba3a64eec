/**
 * The webhook receivers' series (docs/metrics.md, docs/events.md), registered only when
 * `Webhooks` lists a receiver: deliveries by outcome and the queue's depth, read from the webhooks
 * part at scrape time. The `receiver` label is the receiver's `Name`, else its position, never
 * anything of its URL.
 */
import { Counter, Gauge, type Registry } from "prom-client";

export interface WebhookMetricsView {
  readonly receiver: string;
  readonly queued: number;
  /** Events the receiver acknowledged (2xx). */
  readonly delivered: number;
  /** Attempts that failed (non-2xx, no answer in time, no connection). */
  readonly failed: number;
  /** Events dropped from a full queue. */
  readonly dropped: number;
}

export const WEBHOOK_OUTCOMES = ["delivered", "failed", "dropped"] as const;

export function registerWebhookMetrics(
  registers: Registry[],
  read: () => readonly WebhookMetricsView[],
): void {
  new Counter({
    name: "pdu_webhook_deliveries_total",
    help: "Webhook deliveries by receiver and outcome: delivered (2xx), failed (an attempt that is retried), dropped (the oldest undelivered event of a full queue)",
    labelNames: ["receiver", "outcome"],
    registers,
    collect() {
      this.reset();
      for (const view of read())
        for (const outcome of WEBHOOK_OUTCOMES) this.inc({ receiver: view.receiver, outcome }, view[outcome]);
    },
  });
  new Gauge({
    name: "pdu_webhook_queue_depth",
    help: "Webhook events waiting for the receiver (undelivered, in order)",
    labelNames: ["receiver"],
    registers,
    collect() {
      this.reset();
      for (const view of read()) this.set({ receiver: view.receiver }, view.queued);
    },
  });
}
