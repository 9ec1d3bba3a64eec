/**
 * The feeds view: each feed (the power sources above the PDUs) with what it carries now, and the
 * feed-loss projection: if it failed, what each phase, bank, breaker and inlet on the other feeds
 * would carry, as a bar against its rating with the headroom left (an entity the projection cannot
 * place a share on exactly is marked as a lower bound), the assets that would go dark or are at
 * risk, the current it could not place, and its `feed-loss` alarms. Read from `GET /api/v1/feeds`,
 * again on each `assets` event that says the projection was made again.
 */
import { API_PATHS } from "../../../http/api/paths.js";
import type { AssetsEventData, WireFeed, WireLoad, WireProjectedEntity } from "../../wire.js";
import { loadBar } from "../bar.js";
import { keepingFocus } from "./assets.js";
import { readJson } from "../api.js";
import { h, replace, setText } from "../dom.js";
import { amps, fixed, watts } from "../format.js";
import { bootstrap, href, type View } from "../state.js";

/** The entity's projected load as the bars show loads, its state by the alarm lines. */
function projectedLoad(e: WireProjectedEntity): WireLoad {
  const percent = e.ratio === null ? null : Math.round(e.ratio * 100);
  const { warnPercent, criticalPercent } = bootstrap.alarms;
  const state =
    percent === null
      ? "normal"
      : percent >= criticalPercent
        ? "critical"
        : percent >= warnPercent
          ? "warning"
          : "normal";
  return { current: e.projected, rating: e.rating, percent, state };
}

/** "12.4 A left" / "over by 1.2 A" / "no rating". */
function headroom(e: WireProjectedEntity): string {
  if (e.rating === null) return "no rating";
  const left = e.rating - e.projected;
  const text = left >= 0 ? `${amps(left)} left` : `over by ${amps(-left)}`;
  return e.exact ? text : `${text} at most (not every share could be placed)`;
}

function entityRow(e: WireProjectedEntity): HTMLElement {
  const bar = loadBar();
  const name = `${e.instanceId} ${e.name}`;
  bar.update(projectedLoad(e), `${name} if lost`);
  return h(
    "tr",
    { "data-entity": `${e.instanceId}/${e.deviceId}/${e.key}` },
    h(
      "th",
      { scope: "row" },
      h("a", { href: href.pdu(e.instanceId) }, e.instanceId),
      " ",
      e.name,
      e.exact ? null : h("span", { class: "detail" }, " (lower bound)"),
    ),
    h("td", { class: "n" }, amps(e.measured)),
    h("td", { class: "n" }, `+${fixed(e.added, 2)} A`),
    h("td", { class: "proj" }, bar.element, bar.text),
    h("td", {}, headroom(e)),
  );
}

function listOf(title: string, ids: readonly string[], link: (id: string) => string): HTMLElement | null {
  if (ids.length === 0) return null;
  const shown = ids.slice(0, 50);
  return h(
    "p",
    { class: "meta" },
    `${title} (${ids.length}): `,
    ...shown.flatMap((id, i) => [i > 0 ? ", " : "", h("a", { href: link(id) }, id)]),
    ids.length > shown.length ? ` and ${ids.length - shown.length} more` : "",
  );
}

function feedSection(f: WireFeed): HTMLElement {
  const p = f.ifLost;
  // Most loaded first: the headroom that matters most is on top.
  const entities = [...p.entities].sort((x, y) => (y.ratio ?? -1) - (x.ratio ?? -1));
  return h(
    "section",
    { class: "panel feed", "aria-labelledby": `feed-${f.id}`, "data-feed": f.id },
    h("h2", { id: `feed-${f.id}` }, f.label === f.id ? `Feed ${f.id}` : `${f.label} (${f.id})`),
    h(
      "p",
      { class: "meta" },
      `${watts(f.power)}${f.current === null ? "" : ` · ${amps(f.current)}`} now, over ${f.devices} device${f.devices === 1 ? "" : "s"}`,
      f.unseen.length > 0 ? ` · without a reading: ${f.unseen.join(", ")}` : "",
    ),
    f.alarms.length === 0
      ? null
      : h(
          "ul",
          { class: "alarm-list feed-alarms" },
          ...f.alarms.map((a) =>
            h(
              "li",
              { class: "alarm-item" },
              h("span", { class: `badge ${a.severity}` }, a.severity),
              h(
                "span",
                {},
                [a.entityInstanceId ?? "", a.name, a.percent === null ? "" : `${a.percent} %`]
                  .filter(Boolean)
                  .join(" "),
              ),
            ),
          ),
        ),
    h("h3", {}, `If ${f.label} is lost`),
    entities.length === 0
      ? h(
          "p",
          { class: "note" },
          "Nothing on the other feeds to project (no dual-corded asset, or no reading yet).",
        )
      : h(
          "div",
          { class: "scroll" },
          h(
            "table",
            { class: "projection" },
            h("caption", { class: "sr-only" }, `What the other feeds would carry if ${f.label} failed`),
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ...["Entity", "Now", "Moved", "If lost", "Headroom"].map((t) => h("th", { scope: "col" }, t)),
              ),
            ),
            h("tbody", {}, ...entities.map(entityRow)),
          ),
        ),
    listOf("Would go dark", p.dark, href.asset),
    listOf("At risk (other cords on no feed)", p.atRisk, href.asset),
    p.unplaced.length > 0
      ? h(
          "p",
          { class: "meta" },
          `Not placed on a phase or breaker: ${p.unplaced.map((u) => `${u.instanceId} ${amps(u.amps)}`).join(", ")}`,
        )
      : null,
    p.madeUtc === null
      ? null
      : h("p", { class: "meta" }, `Projected at ${new Date(p.madeUtc).toLocaleTimeString()}`),
  );
}

class FeedsView implements View {
  readonly #body = h("div", { class: "feeds" });
  #shown = "";
  #destroyed = false;
  #reading = false;

  constructor(main: HTMLElement) {
    replace(main, h("h1", {}, "Feeds"), this.#body);
    setText(this.#body, "Loading…");
    void this.#read();
  }

  update(): void {
    // Read again on `assets` events.
  }

  assets(data: AssetsEventData): void {
    if (data.feeds || data.reconfigured) void this.#read();
  }

  destroy(): void {
    this.#destroyed = true;
  }

  async #read(): Promise<void> {
    if (this.#reading) return;
    this.#reading = true;
    const feeds = await readJson<WireFeed[]>(API_PATHS.feeds);
    this.#reading = false;
    if (this.#destroyed || feeds === null) return;
    const text = JSON.stringify(feeds);
    if (text === this.#shown) return;
    this.#shown = text;
    if (feeds.length === 0)
      replace(this.#body, h("p", { class: "note" }, "No feed is configured (Feeds in the configuration)."));
    else keepingFocus(this.#body, () => replace(this.#body, ...feeds.map(feedSection)));
  }
}

export function feedsView(main: HTMLElement): View {
  return new FeedsView(main);
}
