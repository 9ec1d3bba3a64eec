/**
 * CPU profile of a child over exactly the measured window, through the V8 inspector (the same
 * sampling profiler that `node --cpu-prof` drives). `--cpu-prof` writes its file only when the
 * process exits cleanly, which a bridge stuck in a busy loop never does; the inspector answers
 * even then (its messages interrupt running JavaScript), and the profile covers only the window.
 *
 * The child must run with `--inspect=127.0.0.1:0`; its log then holds the WebSocket URL.
 */
import { WebSocket } from "undici";
import { sleep } from "./child.js";
import type { CpuProfile } from "./profile-summary.js";

export class InspectorProfiler {
  readonly #ws: WebSocket;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as {
        id?: number;
        result?: unknown;
        error?: { message: string };
      };
      if (message.id === undefined) return;
      const waiter = this.#pending.get(message.id);
      if (!waiter) return;
      this.#pending.delete(message.id);
      if (message.error) waiter.reject(new Error(message.error.message));
      else waiter.resolve(message.result);
    });
    ws.addEventListener("close", () => {
      for (const w of this.#pending.values()) w.reject(new Error("inspector connection closed"));
      this.#pending.clear();
    });
  }

  /** Connects to the inspector whose `Debugger listening on ws://...` line appears in `log()`. */
  static async attach(log: () => string, timeoutMs = 30_000): Promise<InspectorProfiler> {
    const ws = await openInspector(log, timeoutMs);
    return new InspectorProfiler(ws);
  }

  #send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Starts sampling every `intervalUs` microseconds (1000: what `--cpu-prof` uses). */
  async start(intervalUs = 1000): Promise<void> {
    await this.#send("Profiler.enable");
    await this.#send("Profiler.setSamplingInterval", { interval: intervalUs });
    await this.#send("Profiler.start");
  }

  async stop(): Promise<CpuProfile> {
    const { profile } = await this.#send<{ profile: CpuProfile }>("Profiler.stop");
    return profile;
  }

  close(): void {
    this.#ws.close();
  }
}

/** A WebSocket to the inspector whose `Debugger listening on ws://...` line appears in `log()`. */
export async function openInspector(log: () => string, timeoutMs = 30_000): Promise<WebSocket> {
  const deadline = Date.now() + timeoutMs;
  let url: string | undefined;
  while ((url = /Debugger listening on (ws:\/\/\S+)/.exec(log())?.[1]) === undefined) {
    if (Date.now() > deadline) throw new Error("the child printed no inspector URL");
    await sleep(100);
  }
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error(`cannot connect to ${url}`)), { once: true });
  });
  return ws;
}
