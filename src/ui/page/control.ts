/**
 * Control on the page: the buttons, built from the command rows the page is served (the service's
 * command table: label, verb, progress, tone), and the pending state of each target until the PDU
 * reports what was asked for.
 */
import type { WireCommand, WireOutlet } from "../wire.js";
import { apiKey, control } from "./api.js";
import { h } from "./dom.js";
import { commandOf } from "./state.js";

/** How long a switched outlet may stay pending before the page gives up waiting for the PDU. */
export const PENDING_MS = 120_000;

export interface Pending {
  readonly action: string;
  /** The state to wait for (the row's `latches`); null: done when the service answers. */
  readonly want: "on" | "off" | null;
  readonly since: number;
  answered: boolean;
}

export const outletKey = (instanceId: string, deviceId: string, index: number) =>
  `${instanceId}\u0000${deviceId}\u0000${index}`;
export const groupKeyOf = (instanceId: string, groupKey: string) =>
  `${instanceId}\u0000group\u0000${groupKey}`;

/** What a target shows while its command runs. */
export const progressOf = (action: string): string => commandOf(action)?.progress ?? "Pending…";

/** One button per command row; `onClick` gets the row. */
export function commandButtons(
  rows: readonly WireCommand[],
  label: (row: WireCommand) => string,
  onClick: (row: WireCommand) => void,
): HTMLButtonElement[] {
  return rows.map((row) =>
    h(
      "button",
      {
        type: "button",
        class: `cmd tone-${row.tone}`,
        "data-action": row.name,
        "aria-label": label(row),
        onClick: () => onClick(row),
      },
      row.label,
    ),
  );
}

/**
 * Enables the buttons of an outlet: none while a command runs, and not the one whose state the
 * outlet is in already ("On" of an outlet that is on).
 */
export function updateButtons(buttons: readonly HTMLButtonElement[], state: string, pending: boolean): void {
  for (const button of buttons) {
    const row = commandOf(button.dataset.action ?? "");
    const disabled = pending || (row?.latches !== null && row?.latches === state);
    if (button.disabled !== disabled) button.disabled = disabled;
  }
}

/** Outcome notes per target: pending actions, refusals (the problem's detail) and confirmations. */
export class ControlState {
  readonly pending = new Map<string, Pending>();
  readonly notes = new Map<string, { readonly text: string; readonly error: boolean }>();
  readonly #changed: () => void;

  constructor(changed: () => void) {
    this.#changed = changed;
  }

  /** Ends pending on/off actions the PDU now reports (call with every snapshot). */
  settle(key: string, outlet: WireOutlet | undefined, now: number): void {
    const pending = this.pending.get(key);
    if (!pending || !pending.answered) return;
    if (pending.want !== null && outlet?.reported === pending.want) {
      this.pending.delete(key);
      this.notes.set(key, { text: `The PDU reports ${pending.want}.`, error: false });
    } else if (now - pending.since > PENDING_MS) {
      this.pending.delete(key);
      this.notes.set(key, { text: "The PDU has not reported the new state yet.", error: true });
    }
  }

  /** Sends the action (after the confirmation) and tracks it. */
  async run(
    keys: readonly string[],
    instanceId: string,
    target: { deviceId: string; index: number } | { groupKey: string },
    action: string,
  ): Promise<void> {
    const row = commandOf(action);
    const want = row?.latches ?? null;
    const since = Date.now();
    for (const key of keys) {
      this.notes.delete(key);
      this.pending.set(key, { action, want, since, answered: false });
    }
    this.#changed();
    const answer = await control(instanceId, target, action);
    // A key the service no longer takes is forgotten: the controls go until a good one is entered.
    if (answer.status === 401) apiKey.clear();
    for (const key of keys) {
      const pending = this.pending.get(key);
      if (!answer.ok) {
        this.pending.delete(key);
        this.notes.set(key, {
          text: `Refused (${answer.status || "no answer"}): ${answer.detail}`,
          error: true,
        });
      } else if (pending && pending.want === null) {
        this.pending.delete(key);
        this.notes.set(key, { text: row?.done ?? "Done.", error: false });
      } else if (pending) {
        pending.answered = true;
      }
    }
    this.#changed();
  }
}
