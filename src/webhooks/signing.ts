/**
 * The signature of a webhook (docs/events.md, "Checking the signature"):
 * `X-Pdu-Bridge-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the
 * receiver's secret. The time is that of the attempt, so a receiver can refuse old replays.
 */
import { createHmac } from "node:crypto";

export const EVENT_ID_HEADER = "x-pdu-bridge-event-id";
export const SIGNATURE_HEADER = "x-pdu-bridge-signature";

export function signature(secret: string, unixSeconds: number, body: string): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}
