/**
 * Power sequences (docs/assets.md "Sequences"): `POST /api/v1/sequences` plans (the
 * assets core's planSequence) and answers the plan (a dry run) or starts a run here (202 with its
 * id); `GET` reads a sequence's progress from its journal; `DELETE` asks it to stop after the wave
 * in progress. Among several replicas the journal is in the coordination engine: any replica
 * answers `GET` and `DELETE`, and each replica looks for sequences whose runner died (on a change
 * of members and every few seconds) and takes one over by a conditional write of its head, so
 * exactly one survivor resumes it (./sequence-runner.ts).
 */
import { randomBytes } from "node:crypto";
import {
  newJournal,
  parseChunk,
  parseHead,
  requestStop,
  takeOver,
  type JournalChunk,
  type JournalHead,
} from "../assets/journal.js";
import { planSequence, type SequencePlan, type SequenceRequest } from "../assets/sequence.js";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log.js";
import { describeError } from "../pdu/errors.js";
import { sleepFor, type AssetControl } from "./asset-control.js";
import { actionsDisabled } from "./checks.js";
import { listSome } from "./outcomes.js";
import type { SequenceRecords } from "./sequence-records.js";
import { chunkName, headName, SequenceRun } from "./sequence-runner.js";
import type { ControlSource } from "./types.js";

/** Ids this service makes: lowercase, so that a record's name is a valid lease name. */
const SEQUENCE_ID = /^[a-z0-9]{1,24}$/;
const HEAD_NAME = /^sequence-([a-z0-9]{1,24})$/;
/** Runs one process keeps at once. */
export const MAX_RUNS = 16;
/**
 * Most cord writes one wave may have when the journal is in the coordination engine: the head
 * holds a step per cord of the wave in progress and must stay within a record.
 */
export const MAX_WAVE_STEPS_SHARED = 300;
/** Finished sequences whose records are kept (progress stays readable); older ones are deleted. */
export const FINISHED_KEPT = 100;
/** Unreadable heads remembered (not read again, logged once). */
const UNREADABLE_KEPT = 1000;
/** Time given to one call of the store. */
const STORE_TIMEOUT_MS = 10_000;
const storeSignal = (): AbortSignal => AbortSignal.timeout(STORE_TIMEOUT_MS);

export type SequenceAnswer =
  | { readonly ok: true; readonly status: 200 | 202; readonly body: object }
  | {
      readonly ok: false;
      readonly status: 400 | 404 | 409 | 502 | 503;
      readonly title: string;
      readonly detail: string;
      readonly retryAfter?: number;
    };

export interface SequenceService {
  start(
    request: SequenceRequest & { readonly dryRun: boolean },
    source: ControlSource,
  ): Promise<SequenceAnswer>;
  progress(id: string): Promise<SequenceAnswer>;
  stop(id: string, source: ControlSource): Promise<SequenceAnswer>;
}

export interface SequencesDeps {
  readonly config: () => Config;
  readonly records: SequenceRecords;
  readonly control: AssetControl;
  readonly logger: Logger;
  /** How often this process looks for sequences to resume (ms); null: never (one process). */
  readonly scanMs: number | null;
  /** Waits `ms`, ending early when `signal` aborts (tests). */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const fail = (
  status: Extract<SequenceAnswer, { ok: false }>["status"],
  title: string,
  detail: string,
  retryAfter?: number,
): SequenceAnswer => ({
  ok: false,
  status,
  title,
  detail,
  ...(retryAfter === undefined ? {} : { retryAfter }),
});

const unreachable = (error: unknown): SequenceAnswer =>
  fail(503, "Journal unavailable", `the sequences' journal cannot be reached: ${describeError(error)}`, 2);

export class Sequences implements SequenceService {
  readonly #deps: SequencesDeps;
  readonly #logger: Logger;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #runs = new Map<string, { run: SequenceRun; done: Promise<void> }>();
  /** Heads that do not read, logged once each (at most {@link UNREADABLE_KEPT}). */
  readonly #unreadable = new Set<string>();
  /** Finished sequences seen, with their start (the runner's clock): the oldest are deleted. */
  readonly #finished = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #scanning: Promise<void> | null = null;
  #stopped = false;

  constructor(deps: SequencesDeps) {
    this.#deps = deps;
    this.#logger = deps.logger.child({ component: "sequences" });
    this.#sleep = deps.sleep ?? sleepFor;
  }

  /** Starts looking for sequences to resume (among several replicas; nothing in one process). */
  watch(): void {
    const every = this.#deps.scanMs;
    if (every !== null && this.#timer === null) {
      this.#timer = setInterval(() => this.scanSoon(), every);
      this.#timer.unref();
    }
  }

  start(
    request: SequenceRequest & { readonly dryRun: boolean },
    source: ControlSource,
  ): Promise<SequenceAnswer> {
    return this.#begin(request, source);
  }

  /** Looks for sequences to resume now (a change of members), unless a look is running. */
  scanSoon(): void {
    if (this.#stopped || this.#scanning !== null || this.#deps.scanMs === null) return;
    this.#scanning = this.#scan()
      .catch((error: unknown) => {
        this.#logger.debug({ err: describeError(error) }, "sequences: the journal could not be read");
      })
      .finally(() => {
        this.#scanning = null;
      });
  }

  /** Asks a sequence to stop after the wave in progress (any replica: the head is in the journal). */
  stop(id: string, source: ControlSource): Promise<SequenceAnswer> {
    return this.#askStop(id, source);
  }

  /** This process stops: its runs send nothing more and end after the writes in flight. */
  async close(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    for (const { run } of this.#runs.values()) run.halt();
    await Promise.allSettled([...this.#runs.values()].map((r) => r.done));
    await this.#scanning;
  }

  async #begin(
    request: SequenceRequest & { readonly dryRun: boolean },
    source: ControlSource,
  ): Promise<SequenceAnswer> {
    const book = this.#deps.control.book();
    if (book === null)
      return fail(404, "No assets", "no assets are configured, so there is nothing to sequence");
    const planned = planSequence(book.model, request);
    if (!planned.ok)
      return fail(
        404,
        "Unknown asset",
        `the plan names assets that are not configured: ${listSome([...planned.unknown])}; nothing was planned`,
      );
    const plan = planned.plan;
    if (request.dryRun) return { ok: true, status: 200, body: plan };
    const refused = this.#refusal(plan);
    if (refused !== null) return refused;
    let id: string;
    try {
      id = await this.#create(plan, source);
    } catch (error) {
      return unreachable(error);
    }
    this.#logger.info(
      {
        sequence: id,
        action: plan.action,
        assets: plan.assets,
        waves: plan.waves.length,
        source: source.surface,
      },
      `sequence ${id}: started`,
    );
    return { ok: true, status: 202, body: { id, plan } };
  }

  /** Why a plan may not start: empty, control disabled on a cord's instance, too large, too many runs. */
  #refusal(plan: SequencePlan): SequenceAnswer | null {
    if (plan.assets === 0) return fail(400, "Nothing to sequence", "the selection has no asset to switch");
    if (this.#stopped)
      return fail(503, "Service stopping", "the service is stopping; try again once it is back", 5);
    if (this.#runs.size >= MAX_RUNS)
      return fail(
        409,
        "Too many sequences",
        `${MAX_RUNS} sequences are running in this process; wait for one to end`,
      );
    const config = this.#deps.config();
    const model = this.#deps.control.book()?.model;
    const disabled = new Set<string>();
    let widest = 0;
    for (const wave of plan.waves) {
      widest = Math.max(
        widest,
        wave.assets.reduce((n, a) => n + a.cords, 0),
      );
      for (const a of wave.assets)
        for (const cord of model?.assets.get(a.id)?.cords ?? []) {
          const instance = config.instances.find((i) => i.id === cord.instance);
          if (instance === undefined || actionsDisabled(instance) !== null)
            disabled.add(`${a.id} (${cord.instance})`);
        }
    }
    if (disabled.size > 0)
      return fail(
        409,
        "Control disabled",
        `cords of these assets are on instances without ActionsEnabled (or not configured): ${listSome([...disabled])}; nothing was started`,
      );
    if (this.#deps.records.maxRecord !== null && widest > MAX_WAVE_STEPS_SHARED)
      return fail(
        400,
        "Plan too large",
        `a wave of this plan writes ${widest} cords, more than the ${MAX_WAVE_STEPS_SHARED} one journal record holds among several replicas: lower Sequences.MaxConcurrentStarts`,
      );
    return null;
  }

  /** The journal written (plan records first, then the head) and the run started here. */
  async #create(plan: SequencePlan, source: ControlSource): Promise<string> {
    const records = this.#deps.records;
    for (;;) {
      const id = newId();
      const { head, chunks } = newJournal(id, plan, records.identity, Date.now());
      const first = await records.create(chunkName(id, 0), JSON.stringify(chunks[0]), storeSignal());
      if (first === "conflict") continue;
      for (const chunk of chunks.slice(1))
        if (
          (await records.create(chunkName(id, chunk.n), JSON.stringify(chunk), storeSignal())) === "conflict"
        )
          throw new Error(`plan record ${chunk.n} of sequence ${id} exists already`);
      const written = await records.create(headName(id), JSON.stringify(head), storeSignal());
      if (written === "conflict") throw new Error(`the head of sequence ${id} exists already`);
      this.#launch(head, written.version, chunks, source, false);
      return id;
    }
  }

  #launch(
    head: JournalHead,
    version: string,
    chunks: readonly JournalChunk[],
    source: ControlSource,
    resumed: boolean,
  ): void {
    const run = new SequenceRun(
      { records: this.#deps.records, control: this.#deps.control, logger: this.#logger, sleep: this.#sleep },
      head,
      version,
      chunks,
      source,
    );
    const done = run
      .run(resumed)
      .then(async () => {
        const ended = run.head;
        if (ended.state === "done" || ended.state === "stopped") await this.#ended(ended);
      })
      .catch((error: unknown) => {
        this.#logger.debug(
          { sequence: head.id, err: describeError(error) },
          "sequences: old records not deleted",
        );
      })
      .finally(() => this.#runs.delete(head.id));
    this.#runs.set(head.id, { run, done });
  }

  async progress(id: string): Promise<SequenceAnswer> {
    if (!SEQUENCE_ID.test(id))
      return fail(404, "Unknown sequence", `no sequence ${JSON.stringify(id.slice(0, 40))}`);
    try {
      const read = await this.#read(id);
      if (read === null) return fail(404, "Unknown sequence", `no sequence ${id} (or its records are gone)`);
      if ("problem" in read)
        return fail(
          502,
          "Journal unreadable",
          `the journal of sequence ${id} does not read back: ${read.problem}`,
        );
      return { ok: true, status: 200, body: progressOf(read.head, read.chunks) };
    } catch (error) {
      return unreachable(error);
    }
  }

  /** The head and plan records of a sequence, checked; null when there is no head. */
  async #read(
    id: string,
  ): Promise<{ head: JournalHead; version: string; chunks: JournalChunk[] } | { problem: string } | null> {
    const records = this.#deps.records;
    const stored = await records.get(headName(id), storeSignal());
    if (stored === null) return null;
    const head = parseHead(stored.text);
    if ("problem" in head) return head;
    if (head.id !== id) return { problem: "the head names another sequence" };
    const chunks: JournalChunk[] = [];
    for (let n = 0; n < head.chunks; n++) {
      const text = (await records.get(chunkName(id, n), storeSignal()))?.text;
      const chunk = text === undefined ? { problem: `plan record ${n} is missing` } : parseChunk(text, id);
      if ("problem" in chunk) return chunk;
      if (chunk.n !== n) return { problem: `plan record ${n} says it is record ${chunk.n}` };
      chunks.push(chunk);
    }
    return { head, version: stored.version, chunks };
  }

  async #askStop(id: string, source: ControlSource): Promise<SequenceAnswer> {
    if (!SEQUENCE_ID.test(id))
      return fail(404, "Unknown sequence", `no sequence ${JSON.stringify(id.slice(0, 40))}`);
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        const read = await this.#read(id);
        if (read === null) return fail(404, "Unknown sequence", `no sequence ${id}`);
        if ("problem" in read)
          return fail(
            502,
            "Journal unreadable",
            `the journal of sequence ${id} does not read back: ${read.problem}`,
          );
        const asked = requestStop(read.head);
        if (asked === read.head) return { ok: true, status: 202, body: progressOf(read.head, read.chunks) };
        const written = await this.#deps.records.update(
          headName(id),
          JSON.stringify(asked),
          read.version,
          storeSignal(),
        );
        if (written === "conflict") continue;
        this.#runs.get(id)?.run.stopAsked(asked, written.version);
        this.#logger.info(
          { sequence: id, source: source.surface },
          `sequence ${id}: stop asked, after the wave in progress`,
        );
        return { ok: true, status: 202, body: progressOf(asked, read.chunks) };
      }
      return fail(503, "Busy journal", `the journal of sequence ${id} kept changing; try again`, 1);
    } catch (error) {
      return unreachable(error);
    }
  }

  /**
   * Sequences whose runner died, taken over one by one (a conditional write decides who). Only the
   * heads are read; a finished one is remembered and not read again.
   */
  async #scan(): Promise<void> {
    const records = this.#deps.records;
    for (const name of await records.names(storeSignal())) {
      if (this.#stopped || this.#runs.size >= MAX_RUNS) return;
      const id = HEAD_NAME.exec(name)?.[1];
      if (id === undefined || this.#runs.has(id) || this.#finished.has(id) || this.#unreadable.has(id))
        continue;
      const stored = await records.get(name, storeSignal());
      const head = stored === null ? null : parseHead(stored.text);
      if (head === null || "problem" in head || head.id !== id) {
        if (head !== null)
          this.#notResumable(id, "problem" in head ? head.problem : "the head names another sequence");
        continue;
      }
      if (head.state === "done" || head.state === "stopped") {
        await this.#ended(head);
        continue;
      }
      if (records.alive(head.runner)) continue;
      await this.#resume(id);
    }
  }

  /** A sequence whose runner is gone, taken over here if this replica's conditional write lands. */
  async #resume(id: string): Promise<void> {
    const records = this.#deps.records;
    const read = await this.#read(id);
    if (read === null) return;
    if ("problem" in read) return this.#notResumable(id, read.problem);
    const { head, version, chunks } = read;
    if ((head.state !== "running" && head.state !== "stopping") || records.alive(head.runner)) return;
    const mine = takeOver(head, records.identity);
    const written = await records.update(headName(id), JSON.stringify(mine), version, storeSignal());
    if (written === "conflict") return;
    this.#logger.warn(
      { sequence: id, from: head.runner, wave: head.wave },
      `sequence ${id}: its runner is gone; resumed here`,
    );
    this.#launch(
      mine,
      written.version,
      chunks,
      { surface: "rest", client: `sequence ${id} (resumed)` },
      true,
    );
  }

  #notResumable(id: string, problem: string): void {
    if (this.#unreadable.size >= UNREADABLE_KEPT) return;
    this.#unreadable.add(id);
    this.#logger.error(
      { sequence: id, problem },
      `sequence ${id}: its journal does not read back; it is not resumed`,
    );
  }

  /**
   * A sequence seen finished (run here, or read by a scan): remembered, and the records of the
   * oldest finished ones beyond {@link FINISHED_KEPT} deleted, so the journal stays bounded.
   */
  async #ended(head: JournalHead): Promise<void> {
    this.#finished.set(head.id, head.createdAt);
    if (this.#finished.size <= FINISHED_KEPT) return;
    let oldest: [string, number] | null = null;
    for (const entry of this.#finished) if (oldest === null || entry[1] < oldest[1]) oldest = entry;
    if (oldest === null) return;
    this.#finished.delete(oldest[0]);
    await this.#forget(oldest[0]).catch((error: unknown) => {
      this.#logger.debug(
        { sequence: oldest[0], err: describeError(error) },
        "sequences: old records not deleted",
      );
    });
  }

  /** A finished sequence's records deleted (the head last: a head never names missing plan records). */
  async #forget(id: string): Promise<void> {
    const records = this.#deps.records;
    const stored = await records.get(headName(id), storeSignal());
    const head = stored === null ? null : parseHead(stored.text);
    if (stored === null || head === null || "problem" in head) return;
    if (head.state !== "done" && head.state !== "stopped") return;
    for (let n = 0; n < head.chunks; n++) {
      const chunk = await records.get(chunkName(id, n), storeSignal());
      if (chunk !== null) await records.remove(chunkName(id, n), chunk.version, storeSignal());
    }
    await records.remove(headName(id), stored.version, storeSignal());
  }
}

/** A sequence id: 16 characters of a-z0-9. */
function newId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return [...randomBytes(16)].map((b) => alphabet[b % alphabet.length]).join("");
}

/** What `GET /api/v1/sequences/:id` answers: each asset's wave, step and outcome. */
export function progressOf(head: JournalHead, chunks: readonly JournalChunk[]): object {
  const ids = chunks.flatMap((c) => c.assets);
  const settled = head.executed + head.failedCount;
  const failed = new Map(head.failures.map((f) => [f.asset, f]));
  const bySteps = new Map<string, typeof head.steps>();
  for (const s of head.steps) bySteps.set(s.asset, [...(bySteps.get(s.asset) ?? []), s]);
  let wave = 0;
  let inWave = 0;
  const assets = ids.map((id, position) => {
    while (inWave >= (head.sizes[wave] ?? Infinity)) {
      wave++;
      inWave = 0;
    }
    inWave++;
    const failure = failed.get(id);
    if (position < settled) {
      // Beyond the failures the head lists, an asset not listed may have failed too.
      const unlisted = head.failedCount > head.failures.length ? null : "executed";
      return {
        id,
        wave,
        step: "done",
        outcome: failure?.outcome ?? unlisted,
        detail: failure?.detail ?? null,
      };
    }
    const steps = bySteps.get(id);
    if (wave === head.wave && steps !== undefined) {
      const open = steps.some((s) => s.status === "pending" || s.status === "intent");
      return { id, wave, step: "running", outcome: open ? null : outcomeOf(steps), detail: null };
    }
    const ended = head.state === "done" || head.state === "stopped";
    return { id, wave, step: ended ? "skipped" : "waiting", outcome: null, detail: null };
  });
  return {
    id: head.id,
    action: head.action,
    state: head.state,
    runner: head.runner,
    waves: head.sizes.length,
    wave: head.wave,
    assets,
    steps: head.steps.map((s) => ({ asset: s.asset, cord: s.cord, status: s.status, detail: s.detail })),
    executed: head.executed,
    failed: head.failedCount,
  };
}

function outcomeOf(steps: JournalHead["steps"]): "executed" | "partial" | "refused" {
  if (steps.every((s) => s.status === "done")) return "executed";
  if (steps.every((s) => s.status === "refused")) return "refused";
  return "partial";
}
