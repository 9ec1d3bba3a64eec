/**
 * HTTP over a raw socket, for the hostile-input tests: a request line and headers written exactly
 * as given (percent-encodings, absolute-form targets, dot segments that a client library would
 * normalise or refuse), from a chosen loopback address (127.0.0.2, 127.0.0.3, … are distinct
 * clients to the listener), and the answer's status and head read back.
 */
import net, { connect, type Socket } from "node:net";

export interface RawAnswer {
  /** The status code, or 0 when the connection closed (or timed out) before a status line. */
  readonly status: number;
  /** The head (status line and headers), lower-cased header names kept as sent. */
  readonly head: string;
  /** Whatever of the body arrived before the connection closed or `waitMs` passed. */
  readonly body: string;
}

export interface RawOptions {
  readonly host?: string;
  /** The client's own address (a loopback address other than 127.0.0.1 is another client). */
  readonly localAddress?: string;
  /** How long to wait for the whole answer after the head (an event stream never ends). */
  readonly waitMs?: number;
}

/**
 * Sends `request` (the whole text: request line, headers, blank line, body) on a new connection and
 * reads the answer until the connection closes, or until `waitMs` after the head arrived.
 */
export function rawRequest(port: number, request: string, options: RawOptions = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect({
      host: options.host ?? "127.0.0.1",
      port,
      ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
    });
    let text = "";
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const end = text.indexOf("\r\n\r\n");
      const head = end < 0 ? text : text.slice(0, end);
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({ status: match ? Number(match[1]) : 0, head, body: end < 0 ? "" : text.slice(end + 4) });
    };
    // Nothing at all within 10 s counts as no answer.
    timer = setTimeout(finish, 10_000);
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      const hadHead = text.includes("\r\n\r\n");
      text += chunk;
      if (!hadHead && text.includes("\r\n\r\n")) {
        clearTimeout(timer);
        timer = setTimeout(finish, options.waitMs ?? 1_000);
      }
    });
    socket.on("error", finish);
    socket.on("close", finish);
    socket.once("connect", () => socket.write(request));
  });
}

/** A GET of `target` as written, with `Connection: close` and the given extra header lines. */
export function rawGet(
  port: number,
  target: string,
  headers: readonly string[] = [],
  options: RawOptions = {},
): Promise<RawAnswer> {
  const lines = [`GET ${target} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Connection: close", ...headers];
  return rawRequest(port, `${lines.join("\r\n")}\r\n\r\n`, options);
}

/**
 * A raw event-stream client of `GET /api/v1/events?instance=rack` from `from`: the answer's head is
 * read, the rest only when `reading` (a client that never reads keeps its socket paused).
 */
export class RawStream {
  status = 0;
  head = "";
  body = "";
  closed = false;
  readonly socket: Socket;
  readonly answered: Promise<void>;

  constructor(port: number, from: string, reading: boolean, headers: Record<string, string> = {}) {
    this.socket = connect({ host: "127.0.0.1", port, localAddress: from });
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    this.socket.write(
      `GET /api/v1/events?instance=rack HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join("")}\r\n`,
    );
    let text = "";
    this.answered = new Promise((resolve, reject) => {
      this.socket.on("data", (chunk: Buffer) => {
        if (this.status !== 0) {
          this.body += chunk.toString("latin1");
          return;
        }
        text += chunk.toString("latin1");
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) return;
        this.head = text.slice(0, end);
        this.body = text.slice(end + 4);
        this.status = Number(/^HTTP\/1\.1 (\d{3})/.exec(this.head)?.[1] ?? -1);
        // A client that never reads: nothing more is taken from the socket.
        if (!reading) this.socket.pause();
        resolve();
      });
      this.socket.on("error", (error) => {
        this.closed = true;
        reject(error);
      });
      // Closed unanswered (a connection the listener refused): status stays 0.
      this.socket.on("close", () => resolve());
    });
    this.answered.catch(() => undefined);
    this.socket.on("close", () => (this.closed = true));
  }

  /** The body without HTTP/1.1 chunk framing, and whether the last chunk came. */
  dechunked(): { readonly text: string; readonly ended: boolean } {
    let rest = this.body;
    let text = "";
    for (;;) {
      const line = rest.indexOf("\r\n");
      if (line < 0) return { text, ended: false };
      const size = parseInt(rest.slice(0, line), 16);
      if (size === 0) return { text, ended: true };
      if (rest.length < line + 2 + size + 2) return { text, ended: false };
      text += rest.slice(line + 2, line + 2 + size);
      rest = rest.slice(line + 2 + size + 2);
    }
  }

  header(name: string): string | undefined {
    return new RegExp(`^${name}: (.*)$`, "im").exec(this.head)?.[1];
  }

  close(): void {
    this.socket.destroy();
  }
}
