/**
 * The basics shared by testkit, bench and scripts (each ran its own copy before): where the
 * repository is, a sleep, a free loopback port and whether a port accepts connections.
 */
import { connect, createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, with a trailing slash (this file runs from dist/testkit/). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Compiled output (dist/). */
export const DIST = join(REPO_ROOT, "dist");

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether a TCP connection to `host:port` is accepted now (it is closed at once). */
export function canConnect(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
