/**
 * Safe control: the API key dialog, the confirmation naming the PDU, the outlet number and its
 * label, and the pending state of each target until the PDU reports what was asked for.
 */
import type { WireOutlet } from "../wire.js";
import { apiKey, control } from "./api.js";
import { h, replace } from "./dom.js";

/** How long a switched outlet may stay pending before the page gives up waiting for the PDU. */
const PENDING_MS = 120_000;

export interface Pending {
  readonly action: string;
  /** The state to wait for (on/off); null for reboot and resetStats (done when the service answers). */
  readonly want: "on" | "off" | null;
  readonly since: number;
  answered: boolean;
}

export const ACTION_VERBS: Record<string, [string, string]> = {
  on: ["Switch on", "Switching on…"],
  off: ["Switch off", "Switching off…"],
  reboot: ["Reboot", "Rebooting…"],
  resetStats: ["Reset statistics of", "Resetting statistics…"],
};

export const outletKey = (instanceId: string, deviceId: string, index: number) =>
  `${instanceId}\u0000${deviceId}\u0000${index}`;
export const groupKeyOf = (instanceId: string, groupKey: string) =>
  `${instanceId}\u0000group\u0000${groupKey}`;

/** Outcome notes per target: pending actions, refusals (the problem's detail) and confirmations. */
export class ControlState {
  readonly pending = new Map<string, Pending>();
  readonly notes = new Map<string, { readonly text: string; readonly error: boolean }>();
  #changed: () => void;

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
    const want = action === "on" || action === "off" ? action : null;
    const since = Date.now();
    for (const key of keys) {
      this.notes.delete(key);
      this.pending.set(key, { action, want, since, answered: false });
    }
    this.#changed();
    const answer = await control(instanceId, target, action);
    // A wrong key is forgotten: the controls go away until the right one is entered.
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
        this.notes.set(key, { text: action === "reboot" ? "Rebooted." : "Statistics reset.", error: false });
      } else if (pending) {
        pending.answered = true;
      }
    }
    this.#changed();
  }
}

let confirmDialog: HTMLDialogElement | null = null;
let keyDialog: HTMLDialogElement | null = null;

/** Asks "<question>" with a confirm button labelled `verb`; resolves true only on that button. */
export function confirmAction(
  title: string,
  question: readonly (Node | string)[],
  verb: string,
): Promise<boolean> {
  if (!confirmDialog) {
    confirmDialog = h("dialog", { id: "confirm", "aria-labelledby": "confirm-title" });
    document.body.appendChild(confirmDialog);
  }
  const dialog = confirmDialog;
  const form = h(
    "form",
    { method: "dialog" },
    h("h2", { id: "confirm-title" }, title),
    h("p", { id: "confirm-text" }, ...question),
    h(
      "div",
      { class: "buttons" },
      h("button", { value: "cancel", autofocus: true }, "Cancel"),
      h("button", { value: "confirm", class: "danger" }, verb),
    ),
  );
  replace(dialog, form);
  dialog.setAttribute("aria-describedby", "confirm-text");
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
    dialog.showModal();
  });
}

/** The key dialog; resolves true when a key was saved. */
export function askForKey(): Promise<boolean> {
  if (!keyDialog) {
    keyDialog = h("dialog", { id: "key-dialog", "aria-labelledby": "key-title" });
    document.body.appendChild(keyDialog);
  }
  const dialog = keyDialog;
  const input = h("input", {
    id: "key-input",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
  });
  const form = h(
    "form",
    { method: "dialog" },
    h("h2", { id: "key-title" }, "API key"),
    h(
      "p",
      {},
      "Control needs the service's API key. It stays in this tab only (sessionStorage) and is sent as X-Api-Key.",
    ),
    h("label", { for: "key-input" }, "API key"),
    input,
    h(
      "div",
      { class: "buttons" },
      h("button", { value: "cancel", formnovalidate: true }, "Cancel"),
      h("button", { value: "save" }, "Save key"),
    ),
  );
  replace(dialog, form);
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        const saved = dialog.returnValue === "save" && input.value !== "";
        if (saved) apiKey.set(input.value);
        resolve(saved);
      },
      { once: true },
    );
    dialog.showModal();
    input.focus();
  });
}
