/**
 * The embedded MQTT 3.1.1 broker (aedes on a plain TCP listener), started when
 * `Mqtt.Connection.Host` is omitted. Other clients (Home Assistant, mosquitto_sub) connect to it
 * like to any broker. When `Mqtt.Credentials` are set they are required from every client.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer, type AddressInfo, type Server } from "node:net";
import { Aedes, type AedesOptions, type AuthenticateError } from "aedes";
import { ConfigError } from "../config/errors.js";
import { describeError } from "../pdu/errors.js";
import type { Logger } from "../log.js";

export interface EmbeddedBrokerOptions {
  readonly bind: string;
  /** 0 picks a free port (tests); the actual port is reported. */
  readonly port: number;
  /** Required from every client when set. */
  readonly username: string | null;
  readonly password: string | null;
  readonly logger: Logger;
}

export interface EmbeddedBroker {
  /** Address clients on this machine use (the bind address, or loopback for a wildcard bind). */
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function startEmbeddedBroker(options: EmbeddedBrokerOptions): Promise<EmbeddedBroker> {
  const aedesOptions: AedesOptions = {};
  if (options.username !== null || options.password !== null) {
    const user = Buffer.from(options.username ?? "");
    const pass = Buffer.from(options.password ?? "");
    aedesOptions.authenticate = (_client, username, password, done) => {
      if (
        sameBytes(Buffer.from(username ?? ""), user) &&
        password !== undefined &&
        sameBytes(password, pass)
      ) {
        done(null, true);
        return;
      }
      const error = new Error("bad user name or password") as AuthenticateError;
      // AuthErrorCode.BAD_USERNAME_OR_PASSWORD (a const enum, not importable under isolated modules).
      error.returnCode = 4;
      done(error, false);
    };
  }
  const aedes = await Aedes.createBroker(aedesOptions);
  const server = createServer(aedes.handle);
  try {
    await listen(server, options.port, options.bind);
  } catch (error) {
    await closeAedes(aedes);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL") {
      const why =
        code === "EADDRINUSE"
          ? "is already in use"
          : code === "EACCES"
            ? "may not be opened by this user"
            : "is not an address of this machine";
      throw new ConfigError(
        "Mqtt.Embedded.Port",
        `the embedded MQTT broker cannot listen on ${options.bind}:${options.port}: the ${
          code === "EADDRNOTAVAIL" ? "address" : "port"
        } ${why}`,
      );
    }
    throw new Error(
      `the embedded MQTT broker cannot listen on ${options.bind}:${options.port}: ${describeError(error)}`,
    );
  }
  server.on("error", (error) =>
    options.logger.error({ err: describeError(error) }, "embedded MQTT broker error"),
  );
  const port = (server.address() as AddressInfo).port;
  const host = options.bind === "0.0.0.0" ? "127.0.0.1" : options.bind === "::" ? "::1" : options.bind;
  options.logger.info(
    { bind: options.bind, port },
    `embedded MQTT broker listening on ${options.bind}:${port}`,
  );

  let closing: Promise<void> | null = null;
  return {
    host,
    port,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await closeAedes(aedes);
        await closed;
        options.logger.info("embedded MQTT broker stopped");
      })();
      return closing;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen({ port, host }, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

function closeAedes(aedes: Aedes): Promise<void> {
  return new Promise((resolve) => aedes.close(() => resolve()));
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
