/**
 * The availability of the buckets this replica holds, among several replicas (docs/cluster.md,
 * "Availability in Home Assistant"). Each held bucket with instances has one small MQTT connection
 * of its own, client id `<Mqtt.ClientId>-b<bucket>` (the same whichever replica holds the bucket),
 * whose will is `offline` on `P/$buckets/<bucket>/status` (retained) and which publishes `online`
 * there once connected. Discovery's availability names that topic and the instance's own status.
 *
 * - A killed or cut-off holder: its bucket connections end without a DISCONNECT, the broker
 *   publishes their wills, and the bucket's instances show unavailable until the new holder's
 *   connection publishes `online`.
 * - A handover (balance, SIGTERM): the connection ends with a DISCONNECT, so no will: the status
 *   stays `online` for the next holder, and nothing shows unavailable. The lease is released only
 *   after the DISCONNECT was written (the cluster's release waits for it, one second at most), so
 *   the next holder's connection does not find the old one still open.
 * - A bucket lost any other way (its lease could not be renewed, or was taken): the connection is
 *   cut without a DISCONNECT, so the broker publishes the will. This replica never publishes
 *   `offline` itself: a paused replica that resumes would publish it after the new holder's
 *   `online`. Since every holder of a bucket uses the same client id, the broker keeps one
 *   connection per bucket: a new holder connecting takes the session over, and the broker publishes
 *   the old connection's will (if it was still open) before the new connection publishes `online`.
 */
import { readFile } from "node:fs/promises";
import { connect, type IClientOptions, type MqttClient } from "mqtt";
import type { MqttConfig } from "../config/schema.js";
import type { Logger } from "../log.js";
import { describeError } from "../pdu/errors.js";
import type { Topics } from "./topics.js";

/** Delay before a bucket connection that dropped while the bucket is held connects again (ms). */
export const BUCKET_RECONNECT_MS = 1000;

export interface BucketStatusOptions {
  /** An external broker's settings (a cluster never uses the embedded broker). */
  readonly config: MqttConfig;
  readonly topics: Topics;
  readonly logger: Logger;
  /** Whether the bucket is still held here (checked before a reconnect). */
  readonly holds: (bucket: number) => boolean;
}

export class BucketStatus {
  readonly #options: BucketStatusOptions;
  readonly #clients = new Map<number, MqttClient>();
  readonly #timers = new Map<number, NodeJS.Timeout>();
  #ca: Buffer | undefined | null = null;
  #closed = false;

  constructor(options: BucketStatusOptions) {
    this.#options = options;
  }

  /** Buckets with a connection now (for status and tests). */
  get connections(): number {
    return this.#clients.size;
  }

  /** The bucket is held here: connect its status connection (which publishes `online`). */
  hold(bucket: number): void {
    if (this.#closed || this.#clients.has(bucket)) return;
    void this.#open(bucket).catch((error: unknown) => {
      this.#options.logger.warn({ bucket, err: describeError(error) }, "bucket status connection failed");
    });
  }

  /**
   * The bucket is no longer held here. `handover`: a clean end (no will, the status stays `online`
   * for the next holder); otherwise the connection is cut so that the broker publishes the will.
   * Resolves once the connection has ended (on a handover: its DISCONNECT was written), so that the
   * release of the lease can wait for it: the next holder's connection, which has the same client
   * id, then never takes over an open session (which would make the broker publish its will).
   */
  release(bucket: number, handover: boolean): Promise<void> {
    clearTimeout(this.#timers.get(bucket));
    this.#timers.delete(bucket);
    const client = this.#clients.get(bucket);
    if (client === undefined) return Promise.resolve();
    this.#clients.delete(bucket);
    client.removeAllListeners("close");
    return new Promise((resolve) => {
      client.end(!handover, {}, () => resolve());
    });
  }

  /** Ends every connection cleanly (after the cluster handed its buckets over). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    const ending = [...this.#clients.values()].map((c) => c.endAsync(false).catch(() => undefined));
    this.#clients.clear();
    await Promise.all(ending);
  }

  async #open(bucket: number): Promise<void> {
    const { config, topics, logger } = this.#options;
    const c = config.Connection;
    const secure = c.Scheme === "mqtts" || c.Scheme === "wss";
    if (secure && this.#ca === null) {
      this.#ca = c.CaFile === null ? undefined : await readFile(c.CaFile);
    }
    if (this.#closed || this.#clients.has(bucket) || !this.#options.holds(bucket)) return;
    const topic = topics.bucketStatus(bucket);
    const path = c.Scheme === "ws" || c.Scheme === "wss" ? "/mqtt" : "";
    const options: IClientOptions = {
      protocol: c.Scheme,
      host: c.Host ?? "127.0.0.1",
      port: c.Port,
      ...(path === "" ? {} : { path }),
      clientId: `${config.ClientId}-b${bucket}`,
      keepalive: config.KeepAlive,
      protocolVersion: c.ProtocolVersion,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: 10_000,
      log: () => undefined,
      will: { topic, payload: Buffer.from("offline"), qos: 1, retain: true },
      ...(config.Credentials.Username === null ? {} : { username: config.Credentials.Username }),
      ...(config.Credentials.Password === null ? {} : { password: config.Credentials.Password }),
      ...(secure ? { rejectUnauthorized: c.ValidateCertificate } : {}),
      ...(this.#ca === undefined || this.#ca === null ? {} : { ca: this.#ca }),
    };
    const client = connect(options);
    this.#clients.set(bucket, client);
    client.on("connect", () => {
      client.publish(topic, "online", { qos: 1, retain: true }, (error) => {
        if (error !== undefined)
          logger.debug({ bucket, err: describeError(error) }, "bucket online not sent");
      });
    });
    client.on("error", (error) => {
      logger.debug({ bucket, err: describeError(error) }, "bucket status connection error");
    });
    client.on("close", () => {
      // Dropped while held (the broker restarted, or another connection took the id over): again
      // after a pause, while the bucket is still held here.
      if (this.#clients.get(bucket) !== client) return;
      this.#clients.delete(bucket);
      client.end(true);
      if (this.#closed) return;
      const timer = setTimeout(() => {
        this.#timers.delete(bucket);
        if (this.#options.holds(bucket)) this.hold(bucket);
      }, BUCKET_RECONNECT_MS);
      timer.unref();
      this.#timers.set(bucket, timer);
    });
  }
}
