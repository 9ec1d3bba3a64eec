/**
 * One asset: its state, power, redundancy and tags, each cord (the instance with a link to its PDU,
 * the outlet with a link to it, the cord's state and why it is not live, its figures, its feed and
 * what it draws through), and the asset's controls. The controls go through
 * `POST /api/v1/assets/{id}/control`, so every cord passes the control path's checks and the
 * protected-asset rule; they show where every cord's instance has control enabled and this page may
 * control (an operator's session, or the API key), each behind a confirmation that names the asset
 * and its cords. A protected asset has no Off button and its reboot is sent with `confirm`.
 */
import { API_PATHS, fillPath } from "../../../http/api/paths.js";
import type { AssetsEventData, WireAsset } from "../../wire.js";
import { keyPrompt, mayControl } from "../access.js";
import { assetControl, readJson } from "../api.js";
import { confirmAction } from "../confirm.js";
import { h, replace, setClass, setText } from "../dom.js";
import { amps, watts } from "../format.js";
import { href, state, type View } from "../state.js";
import {
  cordText,
  keepingFocus,
  REDUNDANCY_BADGE,
  REDUNDANCY_TEXT,
  STATE_BADGE,
  STATE_TEXT,
} from "./assets.js";

const ACTIONS: readonly { name: "on" | "off" | "reboot"; label: string; verb: string; tone: string }[] = [
  { name: "on", label: "On", verb: "Switch on", tone: "on" },
  { name: "off", label: "Off", verb: "Switch off", tone: "off" },
  { name: "reboot", label: "Reboot", verb: "Reboot", tone: "restart" },
];

function cordRows(a: WireAsset): HTMLElement {
  return h(
    "table",
    { class: "cords" },
    h("caption", { class: "sr-only" }, `Cords of ${a.id}`),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Cord", "Instance", "Outlet", "State", "Power", "Current", "Feed", "Draws through"].map((t) =>
          h("th", { scope: "col" }, t),
        ),
      ),
    ),
    h(
      "tbody",
      {},
      ...a.readings.map((c) =>
        h(
          "tr",
          { "data-cord": c.cord },
          h("th", { scope: "row" }, String(c.cord + 1)),
          h("td", {}, h("a", { href: href.pdu(c.instanceId) }, c.instanceId)),
          h(
            "td",
            {},
            c.deviceId === null
              ? `#${c.index + 1}`
              : h("a", { href: href.outlet(c.instanceId, c.deviceId, c.index) }, `#${c.index + 1}`),
          ),
          h(
            "td",
            {},
            h(
              "span",
              { class: `badge ${c.status === "live" ? "on" : c.status === "off" ? "neutral" : "offline"}` },
              c.status,
            ),
            c.detail === null ? null : h("span", { class: "detail" }, ` ${c.detail}`),
          ),
          h("td", { class: "n" }, watts(c.power)),
          h("td", { class: "n" }, amps(c.current)),
          h("td", {}, c.feed ?? "–"),
          h("td", {}, c.feedsFrom ?? "–"),
        ),
      ),
    ),
  );
}

class AssetView implements View {
  readonly #main: HTMLElement;
  readonly #id: string;
  readonly #body = h("div", { class: "asset-body" });
  readonly #note = h("p", { class: "note", role: "status" });
  #asset: WireAsset | null = null;
  #shown = "";
  #busy = false;
  #destroyed = false;

  constructor(main: HTMLElement, assetId: string) {
    this.#main = main;
    this.#id = assetId;
    replace(
      main,
      h("p", {}, h("a", { href: href.assets(), class: "back" }, "← All assets")),
      h("h1", {}, assetId),
      this.#body,
      this.#note,
    );
    setText(this.#body, "Loading…");
    void this.#read();
  }

  update(): void {
    // Read again on `assets` events; control availability follows the statuses.
    this.#render();
  }

  assets(_data: AssetsEventData): void {
    void this.#read();
  }

  destroy(): void {
    this.#destroyed = true;
  }

  async #read(): Promise<void> {
    const a = await readJson<WireAsset>(fillPath(API_PATHS.asset, { assetId: this.#id }));
    if (this.#destroyed) return;
    if (a === null) {
      replace(this.#body, h("p", { class: "note" }, `No asset named ${this.#id}.`));
      this.#asset = null;
      this.#shown = "";
      return;
    }
    this.#asset = a;
    this.#render();
  }

  /** Whether every cord's instance has control enabled (as its status says). */
  #controlEnabled(a: WireAsset): boolean {
    return a.readings.every((c) => state.statuses.get(c.instanceId)?.actionsEnabled === true);
  }

  #render(): void {
    const a = this.#asset;
    if (a === null) return;
    const controls = this.#controlEnabled(a) ? (mayControl() ? "yes" : "key") : "off";
    const key = `${JSON.stringify(a)}\u0000${controls}\u0000${this.#busy}`;
    if (key === this.#shown) return;
    this.#shown = key;
    const heading = this.#main.querySelector("h1");
    if (heading)
      replace(heading, a.id, " ", h("span", { class: `badge ${STATE_BADGE[a.state]}` }, STATE_TEXT[a.state]));
    keepingFocus(this.#body, () =>
      replace(
        this.#body,
        h(
          "p",
          { class: "meta" },
          [
            a.label === a.id ? "" : a.label,
            a.tenant === null ? "" : `tenant ${a.tenant}`,
            a.tags.join(", "),
            a.protected ? "protected" : "",
          ]
            .filter(Boolean)
            .join(" · "),
        ),
        h(
          "dl",
          { class: "totals" },
          h("div", { class: "figure" }, h("dt", {}, "Power"), h("dd", {}, watts(a.power))),
          h("div", { class: "figure" }, h("dt", {}, "Current"), h("dd", {}, amps(a.current))),
          h(
            "div",
            { class: "figure" },
            h("dt", {}, "Cords live"),
            h("dd", {}, `${a.cordsLive} of ${a.cords}`),
          ),
          h(
            "div",
            { class: "figure" },
            h("dt", {}, "Redundancy"),
            h(
              "dd",
              {},
              h(
                "span",
                { class: `badge ${REDUNDANCY_BADGE[a.redundancy]}`, "data-redundancy": a.redundancy },
                REDUNDANCY_TEXT[a.redundancy],
              ),
            ),
          ),
        ),
        this.#controls(a, controls),
        cordRows(a),
      ),
    );
  }

  #controls(a: WireAsset, controls: "yes" | "key" | "off"): HTMLElement {
    if (controls === "off")
      return h(
        "p",
        { class: "note" },
        "Control is off for an instance of its cords (ActionsEnabled: false): values only.",
      );
    if (controls === "key")
      return h(
        "p",
        { class: "note" },
        "Enter the API key (or sign in as an operator) to switch this asset. ",
        h("button", { type: "button", class: "cmd", onClick: () => keyPrompt.open() }, "Enter API key"),
      );
    const rows = ACTIONS.filter((r) => !(a.protected && r.name === "off"));
    return h(
      "div",
      { class: "asset-controls" },
      ...rows.map((r) =>
        h(
          "button",
          {
            type: "button",
            class: `cmd tone-${r.tone}`,
            "data-action": r.name,
            disabled:
              this.#busy || (r.name === "on" && a.state === "on") || (r.name === "off" && a.state === "off"),
            "aria-label": `${r.label}: asset ${a.id}`,
            onClick: () => void this.#run(a, r),
          },
          r.label,
        ),
      ),
      a.protected
        ? h("span", { class: "detail" }, " Protected: its last live cord is never switched off.")
        : null,
    );
  }

  async #run(a: WireAsset, r: (typeof ACTIONS)[number]): Promise<void> {
    const question = [
      `${r.verb} asset ${a.id}`,
      a.label === a.id ? "" : ` (${a.label})`,
      `: every cord, ${a.readings.map(cordText).join(", ")}?`,
      a.protected && r.name === "reboot" ? " It is protected: each cord goes off and comes back on." : "",
    ];
    if (!(await confirmAction(`${r.verb} ${a.id}`, question, r.verb, r.tone))) return;
    this.#busy = true;
    setText(this.#note, `${r.verb}: sent…`);
    this.#render();
    const answer = await assetControl(a.id, r.name, a.protected && r.name === "reboot");
    this.#busy = false;
    if (this.#destroyed) return;
    setClass(this.#note, answer.ok ? "note" : "note error");
    setText(
      this.#note,
      answer.ok
        ? `${r.verb}: done on every cord.`
        : `Refused (${answer.status || "no answer"}): ${answer.detail}`,
    );
    this.#shown = "";
    await this.#read();
  }
}

export function assetView(main: HTMLElement, assetId: string): View {
  return new AssetView(main, assetId);
}
