/**
 * The "Recent activity" panel: the last few control outcomes from every surface, each saying who
 * asked (the signed-in console user by name, a machine with the API key, or an MQTT command).
 */
import type { ControlEventData } from "../wire.js";
import { h, replace } from "./dom.js";

const MAX_ENTRIES = 5;

function who(event: ControlEventData): string {
  if (event.source === "console") return event.user === null ? "console" : `${event.user.name} (console)`;
  return event.source === "rest" ? "API key" : "MQTT";
}

export class ActivityPanel {
  readonly element: HTMLElement;
  readonly #list = h("ol", { class: "log" });
  readonly #entries: ControlEventData[] = [];

  constructor() {
    this.element = h(
      "aside",
      { class: "events", "aria-labelledby": "log-title" },
      h("h2", { id: "log-title" }, "Recent activity"),
      h("div", { "aria-live": "polite" }, this.#list),
    );
  }

  add(event: ControlEventData): void {
    this.#entries.unshift(event);
    this.#entries.length = Math.min(this.#entries.length, MAX_ENTRIES);
    replace(
      this.#list,
      ...this.#entries.map((e) => {
        const target =
          e.target.kind === "outlet"
            ? `outlet ${e.target.index + 1} of ${e.target.deviceId}`
            : `group ${e.target.groupKey}`;
        const time = new Date(e.atUtc).toLocaleTimeString();
        return h(
          "li",
          { class: e.ok ? "ok" : "bad" },
          h("span", { class: "who" }, who(e)),
          `: ${e.action} ${target} on ${e.instanceId} at ${time}, ${e.ok ? "done" : `${e.status} ${e.detail ?? ""}`}`,
        );
      }),
    );
  }
}
