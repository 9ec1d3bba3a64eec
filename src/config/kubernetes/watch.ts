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
  /** A valid new configuration that needs a restart (`reason` names the keys). Watching has stopped. */
  onRestartRequired(reason: string): void;
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

export function startWatch(
  target: Target,
  env: Env,
  options: WatchOptions,
  current: Current,
  handlers: ConfigWatchHandlers,
  logger: Logger,
): ConfigWatch {
  const backoff = options.backoffMs;
  const timeoutSeconds = options.watchTimeoutSeconds;
  const abort = new AbortController();
  const { signal } = abort;
  const origin = `configmap ${where(target)}`;

  /** Calls a handler; one that throws is logged, it must not end the watch. */
  const call = (name: keyof ConfigWatchHandlers, invoke: () => void) => {
    try {
      invoke();
    } catch (error) {
      logger.warn({ err: error }, `configuration watch: the ${name} handler failed`);
    }
  };
  const report = (error: unknown) => {
    if (!signal.aborted) {
      call("onError", () => handlers.onError(error instanceof Error ? error : new Error(String(error))));
    }
  };

  /** Applies one new state of the ConfigMap. */
  const consider = async (configMap: ConfigMapObject): Promise<void> => {
    const text = configText(target, configMap);
    if (text instanceof ConfigError) return report(text);
    if (text === current.text) return;
    current.text = text;
    let next: Config;
    try {
      next = await parseConfigText(text, origin, env, { source: "kubernetes" });
    } catch (error) {
      return report(error);
    }
    if (signal.aborted) return;
    const diff = diffConfig(current.config, next);
    if (diff.changed.length === 0) return;
    if (diff.restart.length > 0) {
      const reason = `configuration changed (${diff.restart.join(", ")})`;
      logger.info({ configMap: where(target), changed: diff.changed }, `${reason}: restarting`);
      abort.abort();
      call("onRestartRequired", () => handlers.onRestartRequired(reason));
      return;
    }
    current.config = next;
    logger.info({ configMap: where(target), changed: diff.changed }, "configuration changed: applied live");
    call("onChange", () => handlers.onChange(next, diff.live));
  };

  const run = async (): Promise<void> => {
    let delay = backoff.initial;
    while (!signal.aborted) {
      try {
        if (current.resourceVersion === null) {
          const configMap = await target.api.getConfigMap(target.namespace, target.name, signal);
          current.resourceVersion = configMap.resourceVersion;
          await consider(configMap);
          if (signal.aborted) break;
        }
        const stream = await target.api.watchConfigMap(
          target,
          current.resourceVersion,
          timeoutSeconds,
          signal,
        );
        delay = backoff.initial;
        for await (const event of stream) {
          // The server reports watch failures (410 Gone included) as an ERROR event carrying a Status.
          if (event.type === "ERROR") throw new KubernetesApiError(event.code, event.message);
          current.resourceVersion = event.object.resourceVersion;
          if (event.type === "ADDED" || event.type === "MODIFIED") await consider(event.object);
          if (event.type === "DELETED") {
            report(
              new ConfigError(
                "SERVICE_CONFIG_CONFIGMAP",
                `${origin} was deleted; still running on the last configuration`,
              ),
            );
          }
          if (signal.aborted) break;
        }
        logger.debug({ configMap: where(target) }, "configuration watch ended; reconnecting");
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof KubernetesApiError && error.status === 410) {
          current.resourceVersion = null; // Gone: too old to resume from, read the ConfigMap afresh
        } else {
          report(new Error(`watching ${origin}: ${describeApiError(error)}; retrying in ${delay} ms`));
          await sleep(delay, undefined, { signal }).catch(() => undefined);
          delay = Math.min(delay * 2, backoff.max);
          continue;
        }
      }
      await sleep(backoff.initial, undefined, { signal }).catch(() => undefined);
    }
  };

  const done = run().catch((error: unknown) => report(error));
  return {
    async stop() {
      abort.abort();
      await done;
    },
  };
}
