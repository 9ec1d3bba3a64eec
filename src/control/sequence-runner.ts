/**
 * One sequence run (docs/assets.md "Sequences"): its journal's waves written through asset control,
 * step by step as src/assets/journal.ts rules. For each wave: a step per cord of its assets; at most
 * 32 steps marked `intent` and the head written before their writes; each cord written through
 * asset control with the step's once-only id (`once`: the fencing records it before the write and
 * refuses it ever after, on every replica; a 503, nothing sent, is sent again for up to a minute);
 * each outcome recorded; once every step has one, the
 * wave's time waited (ended early when a stop is asked: no later wave starts) and the wave finished.
 *
 * Every head write names the version last read. A conflict is read back: a stop asked by another
 * replica is kept and the run goes on; another runner named means this one was taken over (it was
 * thought dead) and it stops at once. A run taken over ({@link SequenceRun.run} with `resumed`)
 * first settles the steps its predecessor left `intent`: done when the outlet already shows the
 * action's state, else sent again with the same once-only id (refused by the fencing, and then
 * `unknown`, when the first write had been recorded). The wave in progress waits its full time again.
 */
import {
  beginWave,
  finishWave,
  nextBatch,
  parseHead,
  recordOutcome,
  resumeStep,
  waveAssets,
  waveComplete,
  type JournalChunk,
  type JournalHead,
  type JournalStep,
  type StepStatus,
} from "../assets/journal.js";
import type { Logger } from "../log.js";
import { describeError } from "../pdu/errors.js";
import type { AssetControl } from "./asset-control.js";
import type { SequenceRecords } from "./sequence-records.js";
import type { ControlSource } from "./types.js";

/** A head record's name. */
export const headName = (id: string): string => `sequence-${id}`;
/** A plan record's name. */
export const chunkName = (id: string, n: number): string => `sequence-${id}-plan-${n}`;

/** Longest detail kept in a step (the head stays small whatever went wrong). */
const STEP_DETAIL_MAX = 120;
/** Longest detail kept of a failed asset in the head. */
const FAILURE_DETAIL_MAX = 300;
/** How often a run waiting out a wave reads its head again (a stop asked elsewhere). */
const STOP_CHECK_MS = 500;
/** How long a run waits before writing its head again when the store cannot be reached. */
const RETRY_MS = 1000;
/** How long a cord's write answered 503 (nothing sent) is tried again, and how often. */
const NOT_SENT_RETRY_FOR_MS = 60_000;
const NOT_SENT_RETRY_MS = 1000;
/** Time given to one call of the store. */
const STORE_TIMEOUT_MS = 10_000;
const storeSignal = (): AbortSignal => AbortSignal.timeout(STORE_TIMEOUT_MS);

const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;

export interface RunDeps {
  readonly records: SequenceRecords;
  readonly control: Pick<AssetControl, "plan" | "writeCord" | "book" | "auditRefusal">;
  readonly logger: Logger;
  /** Waits `ms`, ending early when `signal` aborts. */
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Told when a wave is begun and when the run ends (the bus's `sequence` event). */
  readonly progress?: (head: JournalHead) => void;
}

type Outcome = { readonly status: Exclude<StepStatus, "pending" | "intent">; readonly detail: string | null };

export class SequenceRun {
  readonly id: string;
  readonly #deps: RunDeps;
  readonly #chunks: readonly JournalChunk[];
  readonly #logger: Logger;
  readonly #source: ControlSource;
  #head: JournalHead;
  #version: string;
  /** Aborted when this process stops the run (its own stop): nothing more is sent. */
  readonly #halt = new AbortController();
  /** Aborted to end a wave's wait early (a stop asked). */
  #wake = new AbortController();

  constructor(
    deps: RunDeps,
    head: JournalHead,
    version: string,
    chunks: readonly JournalChunk[],
    source: ControlSource,
  ) {
    this.id = head.id;
    this.#deps = deps;
    this.#head = head;
    this.#version = version;
    this.#chunks = chunks;
    this.#source = source;
    this.#logger = deps.logger.child({ sequence: head.id });
  }

  get head(): JournalHead {
    return this.#head;
  }

  /** A stop was asked here (the head is written by the caller): the wave's wait ends. */
  stopAsked(head: JournalHead, version: string): void {
    if (head.runner === this.#head.runner) {
      this.#head = { ...this.#head, state: head.state };
      this.#version = version;
    }
    this.#wake.abort();
  }

  /** This process stops: nothing more is sent, the run returns after the writes in flight. */
  halt(): void {
    this.#halt.abort();
    this.#wake.abort();
  }

  /** Runs the sequence to its end (or until taken over or halted); never rejects. */
  async run(resumed: boolean): Promise<void> {
    try {
      if (resumed && !(await this.#settleIntents())) return;
      while (this.#live()) {
        if (!(await this.#runWave())) return;
      }
      const h = this.#head;
      this.#deps.progress?.(h);
      this.#logger.info(
        { state: h.state, executed: h.executed, failed: h.failedCount },
        `sequence ${h.id}: ${h.state}`,
      );
    } catch (error) {
      this.#logger.error({ err: describeError(error) }, `sequence ${this.id}: the run failed`);
    }
  }

  #live(): boolean {
    const state = this.#head.state;
    return (state === "running" || state === "stopping") && !this.#halt.signal.aborted;
  }

  /** One wave: begun, its steps sent in batches, its time waited, finished. False: the run ends. */
  async #runWave(): Promise<boolean> {
    if (this.#head.steps.length === 0) {
      const ids = waveAssets(this.#head, this.#chunks, this.#head.wave);
      const model = this.#deps.control.book()?.model;
      // An asset no longer configured keeps one step, refused when it is sent.
      const assets = ids.map((id) => ({ id, cords: model?.assets.get(id)?.cords.length ?? 1 }));
      this.#logger.info(
        { wave: this.#head.wave, assets: ids.length },
        `sequence ${this.id}: wave ${this.#head.wave}`,
      );
      if (!(await this.#write(beginWave(this.#head, assets)))) return false;
      this.#deps.progress?.(this.#head);
    }
    while (!waveComplete(this.#head)) {
      if (this.#halt.signal.aborted) return false;
      const { head, batch } = nextBatch(this.#head);
      if (batch.length === 0) break;
      if (!(await this.#write(head))) return false;
      if (!(await this.#record(batch, await Promise.all(batch.map((s) => this.#send(s)))))) return false;
    }
    if (!waveComplete(this.#head)) return false;
    await this.#waitWave(this.#head.waits[this.#head.wave] ?? 0);
    if (this.#halt.signal.aborted) return false;
    const finished = finishWave(this.#head);
    const failures = finished.failures.map((f) => ({ ...f, detail: clip(f.detail, FAILURE_DETAIL_MAX) }));
    return this.#write({ ...finished, failures });
  }

  /** The steps a dead runner left `intent`: settled (see the file's comment). False: the run ends. */
  async #settleIntents(): Promise<boolean> {
    const action = this.#head.action;
    const intents = this.#head.steps.filter((s) => s.status === "intent");
    if (intents.length === 0) return true;
    this.#logger.info({ intents: intents.length }, `sequence ${this.id}: resuming the steps left in flight`);
    const outcomes = await Promise.all(
      intents.map((step): Promise<Outcome | null> => {
        const decision = resumeStep(step, action, this.#observe(step));
        if (decision.do === "done")
          return Promise.resolve({
            status: "done",
            detail: `already ${action} when the sequence was resumed`,
          });
        return decision.do === "send" ? this.#send(step) : Promise.resolve(null);
      }),
    );
    return this.#record(intents, outcomes);
  }

  /** The outlet's state now as this process's book reads it (its PDU online), or null. */
  #observe(step: JournalStep): "on" | "off" | null {
    const reading = this.#deps.control.book()?.get(step.asset)?.readings[step.cord];
    if (reading === undefined || reading.status === "unknown") return null;
    return reading.status === "live" ? "on" : "off";
  }

  /** One step's cord written through asset control, with the step's once-only id; never rejects. */
  async #send(step: JournalStep): Promise<Outcome> {
    const control = this.#deps.control;
    const action = this.#head.action;
    const plan = control.plan(step.asset, action, false);
    if ("outcome" in plan) {
      // The asset's refusal is audited once (with its first cord's step).
      if (step.cord === 0) control.auditRefusal(plan, this.#source);
      return { status: "refused", detail: clip(plan.detail, STEP_DETAIL_MAX) };
    }
    const cord = plan.cords[step.cord];
    if (cord === undefined)
      return { status: "refused", detail: "the asset has no such cord now; nothing was sent" };
    // A 503 sent nothing (the instance changing hands, its holder stopping): sent again for a while,
    // with the same once-only id, so a replica taking the instance over carries it out.
    const until = Date.now() + NOT_SENT_RETRY_FOR_MS;
    for (;;) {
      const write = await control.writeCord(plan, cord, action, {
        source: this.#source,
        commandId: step.onceId,
      });
      const again = write.result === "refused" && write.status === 503 && Date.now() < until;
      if (!again || this.#halt.signal.aborted)
        return {
          status: write.result,
          detail: write.detail === undefined ? null : clip(write.detail, STEP_DETAIL_MAX),
        };
      await this.#deps.sleep(NOT_SENT_RETRY_MS, this.#halt.signal);
    }
  }

  /** The outcomes of `steps` recorded in the head, and the head written. */
  #record(steps: readonly JournalStep[], outcomes: readonly (Outcome | null)[]): Promise<boolean> {
    let head = this.#head;
    steps.forEach((step, i) => {
      const outcome = outcomes[i];
      if (outcome !== null && outcome !== undefined)
        head = recordOutcome(head, step.onceId, outcome.status, outcome.detail);
    });
    return this.#write(head);
  }

  /** A wave's wait: `seconds`, ended early by a stop asked (here or, read back, by another replica). */
  async #waitWave(seconds: number): Promise<void> {
    const until = Date.now() + seconds * 1000;
    while (Date.now() < until && this.#head.state === "running" && !this.#halt.signal.aborted) {
      this.#wake = new AbortController();
      await this.#deps.sleep(Math.min(STOP_CHECK_MS, until - Date.now()), this.#wake.signal);
      await this.#readStop();
    }
  }

  /** A stop asked elsewhere, read from the head (store errors are left for the next write). */
  async #readStop(): Promise<void> {
    try {
      const stored = await this.#deps.records.get(headName(this.id), storeSignal());
      if (stored === null || stored.version === this.#version) return;
      const read = parseHead(stored.text);
      if (!("problem" in read) && read.runner === this.#head.runner && read.state === "stopping") {
        this.#head = { ...this.#head, state: "stopping" };
        this.#version = stored.version;
      }
    } catch {
      // The next write of the head tells.
    }
  }

  /**
   * The head written conditionally on the version last read. A conflict is read back: the same
   * runner (a stop asked elsewhere) keeps the stop and writes again; another runner, or a record
   * that does not read, ends the run. A store that cannot be reached is tried again until this
   * process halts the run. True: written.
   */
  async #write(next: JournalHead): Promise<boolean> {
    const name = headName(this.id);
    let head = next;
    for (;;) {
      if (this.#halt.signal.aborted && head.steps.some((s) => s.status === "intent")) return false;
      try {
        const written = await this.#deps.records.update(
          name,
          JSON.stringify(head),
          this.#version,
          storeSignal(),
        );
        if (written !== "conflict") {
          this.#head = head;
          this.#version = written.version;
          return true;
        }
        const stored = await this.#deps.records.get(name, storeSignal());
        const read = stored === null ? null : parseHead(stored.text);
        if (stored === null || read === null || "problem" in read || read.runner !== head.runner) {
          this.#logger.warn(
            { runner: read !== null && !("problem" in read) ? read.runner : null },
            `sequence ${this.id}: another replica runs it now (or its record is gone); this one stops`,
          );
          return false;
        }
        this.#version = stored.version;
        if (read.state === "stopping" && head.state === "running") head = { ...head, state: "stopping" };
      } catch (error) {
        if (this.#halt.signal.aborted) return false;
        this.#logger.warn(
          { err: describeError(error) },
          `sequence ${this.id}: its journal cannot be written; retrying`,
        );
        await this.#deps.sleep(RETRY_MS, this.#halt.signal);
      }
    }
  }
}
