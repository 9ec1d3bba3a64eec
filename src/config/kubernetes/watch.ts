/**
 * Watching the ConfigMap: reconnects with a backoff, starts afresh after 410 Gone, and hands each new
 * valid configuration to the handlers as a live change or a restart (./diff.ts decides which).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "../../log.js";
import { ConfigError } from "../errors.js";
import { parseConfigText, type Env } from "../load.js";
import type { Config } from "../schema.js";
import {
  configText,
  describeApiError,
  KubernetesApiError,
  where,
  type ConfigMapObject,
  type Target,
} from "./api.js";
import { diffConfig, type LiveChanges } from "./diff.js";

export interface ConfigWatchHandlers {
  /** A valid new configuration whose changes all apply live: apply `live`; `next` is the new whole. */
  onChange(next: Config, live: LiveChanges): void;
  /**
   * A valid new configuration that needs a restart (`reason` names the keys; `next` is the new
   * whole, for what the running service does before it stops). Watching has stopped.
   */
  onRestartRequired(reason: string, next: Config): void;
  /** Invalid new configuration (a ConfigError), ConfigMap deleted, or the watch failed (it retries). */
  onError(error: Error): void;
}

export interface ConfigWatch {
  /** Ends the watch; resolves once its connection is closed. */
  stop(): Promise<void>;
}

export interface WatchOptions {
  /** Reconnect delay: `initial` ms after a failure, doubling up to `max`. */
  readonly backoffMs: { readonly initial: number; readonly max: number };
  /** How long the API server keeps one watch open before it ends it and we reconnect. */
  readonly watchTimeoutSeconds: number;
}

export interface Current {
  config: Config;
  /** The last `config.yaml` text seen, valid or not, so a repeated event is not reported twice. */
  text: string;
  /** null: the watch must start from a fresh read (after 410 Gone). */
  resourceVersion: string | null;
}

/** Starts watching; the returned handle stops it. */
export function startWatch(
  target: Target,
  env: Env,
  options: WatchOptions,
  current: Current,
  handlers: ConfigWatchHandlers,
  logger: Logger,
): ConfigWatch {
  const watch = new ConfigMapWatch(target, env, options, current, handlers, logger);
  const done = watch.run().catch((error: unknown) => watch.report(error));
  return {
    async stop() {
      watch.abort();
      await done;
    },
  };
}

/** One watch of one ConfigMap, in named steps: run (the loop), follow (one stream), consider (one state). */
class ConfigMapWatch {
  readonly #target: Target;
  readonly #env: Env;
  readonly #options: WatchOptions;
  readonly #current: Current;
  readonly #handlers: ConfigWatchHandlers;
  readonly #logger: Logger;
  readonly #abort = new AbortController();
  readonly #origin: string;

  constructor(
    target: Target,
    env: Env,
    options: WatchOptions,
    current: Current,
    handlers: ConfigWatchHandlers,
    logger: Logger,
  ) {
    this.#target = target;
    this.#env = env;
    this.#options = options;
    this.#current = current;
    this.#handlers = handlers;
    this.#logger = logger;
    this.#origin = `configmap ${where(target)}`;
  }

  get #signal(): AbortSignal {
    return this.#abort.signal;
  }

  abort(): void {
    this.#abort.abort();
  }

  /** Watches until aborted: reconnects after a stream ends, backs off after a failure. */
  async run(): Promise<void> {
    const { backoffMs } = this.#options;
    let delay = backoffMs.initial;
    while (!this.#signal.aborted) {
      try {
        if (this.#current.resourceVersion === null) await this.#readAfresh();
        if (this.#signal.aborted) break;
        await this.#follow(() => (delay = backoffMs.initial));
        this.#logger.debug({ configMap: where(this.#target) }, "configuration watch ended; reconnecting");
      } catch (error) {
        if (this.#signal.aborted) break;
        if (error instanceof KubernetesApiError && error.status === 410) {
          this.#current.resourceVersion = null; // Gone: too old to resume from, read the ConfigMap afresh
        } else {
          this.report(
            new Error(`watching ${this.#origin}: ${describeApiError(error)}; retrying in ${delay} ms`),
          );
          await this.#sleep(delay);
          delay = Math.min(delay * 2, backoffMs.max);
          continue;
        }
      }
      await this.#sleep(backoffMs.initial);
    }
  }

  /** After 410 Gone (or at first): GET the ConfigMap and consider it. */
  async #readAfresh(): Promise<void> {
    const { api, namespace, name } = this.#target;
    const configMap = await api.getConfigMap(namespace, name, this.#signal);
    this.#current.resourceVersion = configMap.resourceVersion;
    await this.#consider(configMap);
  }

  /** One watch stream, from the last resource version until the server ends it. */
  async #follow(onOpen: () => void): Promise<void> {
    const stream = await this.#target.api.watchConfigMap(
      this.#target,
      this.#current.resourceVersion ?? "",
      this.#options.watchTimeoutSeconds,
      this.#signal,
    );
    onOpen();
    for await (const event of stream) {
      // The server reports watch failures (410 Gone included) as an ERROR event carrying a Status.
      if (event.type === "ERROR") throw new KubernetesApiError(event.code, event.message);
      this.#current.resourceVersion = event.object.resourceVersion;
      if (event.type === "ADDED" || event.type === "MODIFIED") await this.#consider(event.object);
      if (event.type === "DELETED") {
        this.report(
          new ConfigError(
            "SERVICE_CONFIG_CONFIGMAP",
            `${this.#origin} was deleted; still running on the last configuration`,
          ),
        );
      }
      if (this.#signal.aborted) break;
    }
  }

  /** Applies one new state of the ConfigMap: nothing, a live change, or a restart. */
  async #consider(configMap: ConfigMapObject): Promise<void> {
    const current = this.#current;
    const text = configText(this.#target, configMap);
    if (text instanceof ConfigError) return this.report(text);
    if (text === current.text) return;
    current.text = text;
    let next: Config;
    try {
      next = await parseConfigText(text, this.#origin, this.#env, { source: "kubernetes" });
    } catch (error) {
      return this.report(error);
    }
    if (this.#signal.aborted) return;
    const diff = diffConfig(current.config, next);
    if (diff.changed.length === 0) return;
    const logged = { configMap: where(this.#target), changed: diff.changed };
    if (diff.restart.length > 0) {
      const reason = `configuration changed (${diff.restart.join(", ")})`;
      this.#logger.info(logged, `${reason}: restarting`);
      this.#abort.abort();
      this.#call("onRestartRequired", () => this.#handlers.onRestartRequired(reason, next));
      return;
    }
    current.config = next;
    this.#logger.info(logged, "configuration changed: applied live");
    this.#call("onChange", () => this.#handlers.onChange(next, diff.live));
  }

  /** Hands an error to onError, unless the watch was stopped. */
  report(error: unknown): void {
    if (this.#signal.aborted) return;
    const e = error instanceof Error ? error : new Error(String(error));
    this.#call("onError", () => this.#handlers.onError(e));
  }

  /** Calls a handler; one that throws is logged, it must not end the watch. */
  #call(name: keyof ConfigWatchHandlers, invoke: () => void): void {
    try {
      invoke();
    } catch (error) {
      this.#logger.warn({ err: error }, `configuration watch: the ${name} handler failed`);
    }
  }

  #sleep(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.#signal }).catch(() => undefined);
  }
}
