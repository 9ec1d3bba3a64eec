/**
 * A webhook receiver for the tests (docs/events.md, Webhooks): a real HTTP or HTTPS server on a
 * loopback port that records every delivery (its id header, whether its signature checks out with
 * the secret, the body) and can be stopped and started again on the same port, slowed, made to
 * answer errors, or made hostile (a huge body, a body that never ends, a redirect).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { selfSignedCertificate } from "../src/simulator/cert.js";

export type ReceiverMode = "ok" | "error" | "slow" | "huge-body" | "endless-body" | "redirect";

export interface Delivery {
  readonly id: string;
  readonly body: string;
  readonly json: { id: string; type: string; instance: string | null; [key: string]: unknown };
  /** The signature header checks out against the secret (and its id header matches the body's). */
  readonly valid: boolean;
  readonly at: number;
}

/** The check a receiver makes: `t=<unix>,v1=<hex HMAC-SHA256 of "t.body">` (docs/events.md). */
export function signatureValid(secret: string, header: string, body: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (match === null) return false;
  const expected = createHmac("sha256", secret).update(`${match[1]}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(match[2]!, "hex"));
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  /** Requests answered, whatever the mode. */
  requests = 0;
  mode: ReceiverMode = "ok";
  /** Delay before answering in `slow` mode (ms). */
  slowMs = 0;
  /** Where `redirect` points. */
  redirectTo = "http://127.0.0.1:9/";
  readonly #secret: string;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #port = 0;
  readonly tls: { cert: string; key: string } | null;

  private constructor(secret: string, tls: { cert: string; key: string } | null) {
    this.#secret = secret;
    this.tls = tls;
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.#handle(req, res);
    this.#server = tls === null ? createHttpServer(handler) : createHttpsServer(tls, handler);
    this.#server.on("connection", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
    });
    // TLS sockets are tracked through their underlying connection.
    this.#server.on("secureConnection", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
    });
  }

  static async start(
    secret: string,
    options: { https?: boolean; port?: number } = {},
  ): Promise<WebhookReceiver> {
    const tls = options.https === true ? await selfSignedCertificate() : null;
    const receiver = new WebhookReceiver(secret, tls === null ? null : { cert: tls.cert, key: tls.key });
    await receiver.listen(options.port ?? 0);
    return receiver;
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `${this.tls === null ? "http" : "https"}://127.0.0.1:${this.#port}/hooks/pdu?token=t0k3n`;
  }

  /** Starts listening (again) on `port` (0: any; after {@link down}: the same as before). */
  async listen(port = this.#port): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, "127.0.0.1", () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  /** Stops listening and drops every open connection: the receiver is down. */
  async down(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  /** Each id's first delivery, in the order they first arrived. */
  unique(): Delivery[] {
    const seen = new Set<string>();
    return this.deliveries.filter((d) => (seen.has(d.id) ? false : (seen.add(d.id), true)));
  }

  async close(): Promise<void> {
    if (this.#server.listening) await this.down();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const mode = this.mode;
    if (mode === "slow") await new Promise((resolve) => setTimeout(resolve, this.slowMs));
    if (mode === "error") {
      res.writeHead(500, { "content-type": "text/plain" }).end("receiver-error-body-must-not-be-logged");
      return;
    }
    if (mode === "redirect") {
      res.writeHead(302, { location: this.redirectTo }).end();
      return;
    }
    this.#record(req, body);
    if (mode === "huge-body") return this.#huge(res);
    if (mode === "endless-body") {
      // Headers at once, then a byte now and then, never the end.
      res.writeHead(200, { "content-type": "text/plain" });
      const timer = setInterval(() => res.write("x"), 200);
      res.on("close", () => clearInterval(timer));
      return;
    }
    res.writeHead(204).end();
  }

  #record(req: IncomingMessage, body: string): void {
    const id = String(req.headers["x-pdu-bridge-event-id"] ?? "");
    const header = String(req.headers["x-pdu-bridge-signature"] ?? "");
    let json: Delivery["json"];
    try {
      json = JSON.parse(body) as Delivery["json"];
    } catch {
      json = { id: "", type: "(not JSON)", instance: null };
    }
    const valid = signatureValid(this.#secret, header, body) && json.id === id;
    this.deliveries.push({ id, body, json, valid, at: Date.now() });
  }

  /** 200 and 64 MiB of body, as fast as the socket takes it. */
  #huge(res: ServerResponse): void {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    const block = Buffer.alloc(1024 * 1024, 0x61);
    let left = 64;
    const more = (): void => {
      while (left > 0) {
        left--;
        if (!res.write(block)) {
          res.once("drain", more);
          return;
        }
      }
      res.end();
    };
    res.on("error", () => undefined);
    more();
  }
}
