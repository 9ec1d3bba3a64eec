/**
 * The pdu-bridge web console (docs/console.md): the page's shell (skip link, header, the active
 * alarms and recent events panels), its routes, and the event stream that feeds the views. Hash
 * routes, one file per view (src/ui/page/views/):
 *
 *   #/                          fleet
 *   #/i/<instance>              PDU: totals, phases and breakers, outlets, measurements
 *   #/i/<instance>/groups       OneView groups
 *   #/i/<instance>/o/<dev>/<n>  one outlet and its power
 *   #/assets                    assets: state, power, redundancy, cords
 *   #/assets/<asset>            one asset: its cords and controls
 *   #/feeds                     feeds and the feed-loss projection
 */
import "./style.css";
import { keyPrompt, mayControl } from "./access.js";
import { AlarmsPanel } from "./alarms-panel.js";
import { apiKey, Feed } from "./api.js";
import { ControlState } from "./control.js";
import { append, h, replace, setText } from "./dom.js";
import { EventsPanel } from "./events-panel.js";
import { askForKey } from "./key-dialog.js";
import { signedIn, signInEnabled, signOut, startSession } from "./session.js";
import { alarmKey, href, parseRoute, state, type Route, type View } from "./state.js";
import { assetView } from "./views/asset.js";
import { assetsView } from "./views/assets.js";
import { feedsView } from "./views/feeds.js";
import { fleetView } from "./views/fleet.js";
import { groupsView } from "./views/groups.js";
import { outletView } from "./views/outlet.js";
import { pduView } from "./views/pdu.js";

// ---- shell -------------------------------------------------------------------------------------

const root = document.getElementById("app")!;
const liveBadge = h("span", { class: "live", role: "status" }, "Connecting…");
const keyButton = h("button", { type: "button", class: "key-button", onClick: () => void toggleKey() });
const crumbs = h("nav", { "aria-label": "Breadcrumb", class: "crumbs" });
const main = h("main", { id: "main", tabindex: "-1" });
const alarmsPanel = new AlarmsPanel();
const eventsPanel = new EventsPanel();
/** Who is signed in (with sign-in on), shown where the key button is otherwise. */
const userBadge = h("span", { class: "user", hidden: true });
append(root, [
  h("a", { class: "skip", href: "#main", onClick: skipToMain }, "Skip to content"),
  h(
    "header",
    { class: "top" },
    h("a", { class: "brand", href: href.fleet() }, "pdu-bridge"),
    crumbs,
    h("div", { class: "top-right" }, liveBadge, userBadge, keyButton),
  ),
  h(
    "div",
    { class: "layout" },
    main,
    h(
      "aside",
      { class: "side", "aria-label": "Alarms and events" },
      alarmsPanel.element,
      eventsPanel.element,
    ),
  ),
]);

function skipToMain(event: Event): void {
  event.preventDefault();
  main.focus();
}

function renderKeyButton(): void {
  if (signInEnabled()) {
    const user = signedIn();
    userBadge.hidden = user === null;
    setText(userBadge, user === null ? "" : `${user.user.name} · ${user.role}`);
    setText(keyButton, "Sign out");
    return;
  }
  setText(keyButton, apiKey.get() === null ? "Enter API key" : "Forget API key");
}

async function toggleKey(): Promise<void> {
  if (signInEnabled()) return signOut();
  if (apiKey.get() === null) await askForKey();
  else apiKey.clear();
  renderKeyButton();
  rebuild();
}

keyPrompt.open = () => void toggleKey();

const controls = new ControlState(() => {
  renderKeyButton();
  // A key the service refused was forgotten: the views drop their controls.
  if (!mayControl()) rebuild();
  else view?.update(null);
});

// ---- routes ------------------------------------------------------------------------------------

let view: View | null = null;

/** A crumb linking to `link`, the current page when `current`. */
const crumb = (link: string, text: string, current: boolean): HTMLElement =>
  h("li", {}, h("a", { href: link, "aria-current": current ? "page" : null }, text));

function renderCrumbs(route: Route): void {
  const items: HTMLElement[] = [
    crumb(href.fleet(), "Fleet", route.view === "fleet"),
    crumb(href.assets(), "Assets", route.view === "assets"),
    crumb(href.feeds(), "Feeds", route.view === "feeds"),
  ];
  if (route.view === "asset") items.push(crumb(href.asset(route.assetId), route.assetId, true));
  if (route.view === "pdu" || route.view === "groups" || route.view === "outlet") {
    items.push(crumb(href.pdu(route.instanceId), route.instanceId, route.view === "pdu"));
    if (route.view === "groups") items.push(crumb(href.groups(route.instanceId), "Groups", true));
    if (route.view === "outlet")
      items.push(
        crumb(href.outlet(route.instanceId, route.deviceId, route.index), `Outlet ${route.index + 1}`, true),
      );
  }
  replace(crumbs, h("ol", {}, ...items));
}

/** Builds the view of the current route from scratch (route change, key entered or forgotten). */
function rebuild(): void {
  view?.destroy?.();
  const route = state.route;
  main.classList.remove("stale");
  main.classList.toggle("wide", route.view === "fleet" || route.view === "assets");
  if (route.view === "fleet") view = fleetView(main);
  else if (route.view === "assets") view = assetsView(main);
  else if (route.view === "asset") view = assetView(main, route.assetId);
  else if (route.view === "feeds") view = feedsView(main);
  else if (route.view === "outlet")
    view = outletView(main, controls, route.instanceId, route.deviceId, route.index);
  else if (route.view === "pdu") view = pduView(main, controls, route.instanceId);
  else view = groupsView(main, controls, route.instanceId);
  view.update(route.view === "fleet" ? new Set(state.statuses.keys()) : null);
}

// ---- the event stream --------------------------------------------------------------------------

/** Once per page load: when the first statuses arrived (the console benchmark reads it). */
let firstStatusMarked = false;

const feed = new Feed({
  status(data) {
    if (!firstStatusMarked) {
      firstStatusMarked = true;
      performance.mark("pdu-bridge:first-status");
    }
    const changed = new Set<string>();
    for (const s of data.instances) {
      state.statuses.set(s.id, s);
      changed.add(s.id);
      // Among several replicas: a holder whose state cannot be had shows no values, not its last ones.
      if (s.replica?.state === "none" && state.snapshot?.instanceId === s.id) state.snapshot = null;
    }
    const route = state.route;
    if (route.view === "fleet") view?.update(changed);
    else if (!("instanceId" in route) || changed.has(route.instanceId)) view?.update(null);
  },
  snapshot(data) {
    const route = state.route;
    if (!("instanceId" in route) || data.instanceId !== route.instanceId) return;
    state.snapshot = data;
    view?.update(null);
  },
  control(data) {
    eventsPanel.add({ kind: "control", ...data });
  },
  alarm(data) {
    if (data.change === "cleared") state.alarms.delete(alarmKey(data.alarm));
    else state.alarms.set(alarmKey(data.alarm), data.alarm);
    alarmsPanel.changed();
    eventsPanel.add({ kind: "alarm", ...data });
  },
  trap(data) {
    eventsPanel.add({ kind: "trap", ...data });
  },
  alarms(data) {
    state.alarms.clear();
    for (const a of data.alarms) state.alarms.set(alarmKey(a), a);
    alarmsPanel.changed();
  },
  recent(data) {
    eventsPanel.reset(data.events);
  },
  assets(data) {
    view?.assets?.(data);
  },
  connection(live) {
    setText(liveBadge, live ? "Live" : "Reconnecting…");
    liveBadge.className = `live${live ? "" : " down"}`;
  },
});

function titleOf(route: Route): string {
  if (route.view === "fleet") return "Fleet";
  if (route.view === "assets") return "Assets";
  if (route.view === "feeds") return "Feeds";
  if (route.view === "asset") return route.assetId;
  return route.instanceId;
}

function navigate(first: boolean): void {
  const route = parseRoute(location.hash);
  const previous = state.route;
  state.route = route;
  const instanceId = "instanceId" in route ? route.instanceId : null;
  if (!("instanceId" in previous) || instanceId !== previous.instanceId) state.snapshot = null;
  document.title = `${titleOf(route)} · pdu-bridge`;
  renderCrumbs(route);
  rebuild();
  feed.open(instanceId);
  // After a route change the new view starts at its top and is where reading goes on; on load the
  // skip link stays the first Tab stop.
  if (!first) {
    window.scrollTo(0, 0);
    main.focus({ preventScroll: true });
  }
}

window.addEventListener("hashchange", () => navigate(false));
window.setInterval(() => {
  view?.update(null);
  alarmsPanel.tick();
}, 1000);
await startSession();
renderKeyButton();
navigate(true);
