/**
 * A hostile Geist PDU over real HTTP on loopback, for the tests of PDU-supplied names and writes:
 * it serves whatever `GET /api` tree a test sets (ids, keys and types the real simulator would never
 * invent), answers logins, records every request, and can misbehave on writes the way a real unit
 * can: close the socket right after reading a write's body, without any answer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface HostileRequest {
  readonly method: string;
  /** The raw request target, exactly as received (not normalised). */
  readonly url: string;
  readonly body: string;
  /** The body's `cmd`, when it is JSON with one. */
  readonly cmd: string | null;
  readonly data: unknown;
}

/** What a write (`POST /api/dev/...`) gets: a normal answer, or the socket closed after the body. */
export type WriteBehaviour = "ok" | "close-after-body";

export class HostilePdu {
  readonly host = "127.0.0.1";
  readonly requests: HostileRequest[] = [];
  /** The `data` of `GET /api`. */
  tree: unknown = {};
  /** The raw JSON text of `GET /api`'s `data` (wins over `tree`): strings no JSON.stringify makes. */
  rawTree: string | null = null;
  writes: WriteBehaviour = "ok";
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(server: Server) {
    this.#server = server;
    server.on("connection", (socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
    });
  }

  static async start(): Promise<HostilePdu> {
    let pdu: HostilePdu | null = null;
    const server = createServer((req, res) => {
      pdu?.handle(req, res);
    });
    pdu = new HostilePdu(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return pdu;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** The recorded writes (`POST /api/dev/...`). */
  writesSeen(): HostileRequest[] {
    return this.requests.filter((r) => r.method === "POST" && r.url.startsWith("/api/dev/"));
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let cmd: string | null = null;
      let data: unknown = null;
      try {
        const parsed = JSON.parse(body) as { cmd?: unknown; data?: unknown };
        cmd = typeof parsed.cmd === "string" ? parsed.cmd : null;
        data = parsed.data ?? null;
      } catch {
        // not JSON: recorded as is
      }
      const url = req.url ?? "";
      this.requests.push({ method: req.method ?? "", url, body, cmd, data });
      const answer = (envelope: string) => {
        res.writeHead(200, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(envelope),
        });
        res.end(envelope);
      };
      if (req.method === "GET" && url === "/api/conf/oneview/enabled") {
        answer('{"retCode":0,"retMsg":"","data":false}');
      } else if (req.method === "GET" && url === "/api") {
        answer(`{"retCode":0,"retMsg":"","data":${this.rawTree ?? JSON.stringify(this.tree)}}`);
      } else if (req.method === "POST" && url.startsWith("/api/auth/")) {
        answer('{"retCode":0,"retMsg":"","data":{"token":"t0k3n"}}');
      } else if (req.method === "POST" && url.startsWith("/api/dev/")) {
        if (this.writes === "close-after-body") {
          req.socket.destroy();
          return;
        }
        answer('{"retCode":0,"retMsg":"","data":null}');
      } else {
        answer('{"retCode":3,"retMsg":"path not found","data":null}');
      }
    });
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** A minimal valid single-unit tree: one device with `outlets` outlets, each with one measurement. */
export function unitTree(deviceId: string, outlets = 2): Record<string, unknown> {
  const outlet: Record<string, unknown> = {};
  for (let i = 0; i < outlets; i++) {
    outlet[String(i)] = {
      name: `Outlet ${i + 1}`,
      label: "",
      state: "on",
      rebootDelay: 5,
      measurement: { "0": { type: "realPower", value: "10", units: "W" } },
    };
  }
  return {
    sys: { model: "hostile" },
    dev: { [deviceId]: { name: "unit", label: "", state: "normal", outlet } },
  };
}
