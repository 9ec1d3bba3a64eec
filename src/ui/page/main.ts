/**
 * The pdu-bridge web console (docs/console.md): the page's shell (skip link, header, the active
 * alarms and recent events panels), its routes, and the event stream that feeds the views. Hash
 * routes, one file per view (src/ui/page/views/):
 *
 *   #/                          fleet
 *   #/i/<instance>              PDU: totals, phases and breakers, outlets, measurements
 *   #/i/<instance>/groups       OneView groups
 *   #/i/<instance>/o/<dev>/<n>  one outlet and its power
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

function renderCrumbs(route: Route): void {
  const items: HTMLElement[] = [
    h(
      "li",
      {},
      h("a", { href: href.fleet(), "aria-current": route.view === "fleet" ? "page" : null }, "Fleet"),
    ),
  ];
  if (route.view !== "fleet") {
    items.push(
      h(
        "li",
        {},
        h(
          "a",
          { href: href.pdu(route.instanceId), "aria-current": route.view === "pdu" ? "page" : null },
          route.instanceId,
        ),
      ),
    );
    if (route.view === "groups")
      items.push(
        h("li", {}, h("a", { href: href.groups(route.instanceId), "aria-current": "page" }, "Groups")),
      );
    if (route.view === "outlet") {
      items.push(
        h(
          "li",
          {},
          h(
            "a",
            { href: href.outlet(route.instanceId, route.deviceId, route.index), "aria-current": "page" },
            `Outlet ${route.index + 1}`,
          ),
        ),
      );
    }
  }
  replace(crumbs, h("ol", {}, ...items));
}

/** Builds the view of the current route from scratch (route change, key entered or forgotten). */
function rebuild(): void {
  view?.destroy?.();
  const route = state.route;
  main.classList.remove("stale");
  main.classList.toggle("wide", route.view === "fleet");
  if (route.view === "fleet") view = fleetView(main);
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
    if (state.route.view === "fleet") view?.update(changed);
    else if (changed.has(state.route.instanceId)) view?.update(null);
  },
  snapshot(data) {
    const route = state.route;
    if (route.view === "fleet" || data.instanceId !== route.instanceId) return;
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
  alarms(data) {
    state.alarms.clear();
    for (const a of data.alarms) state.alarms.set(alarmKey(a), a);
    alarmsPanel.changed();
  },
  recent(data) {
    eventsPanel.reset(data.events);
  },
  connection(live) {
    setText(liveBadge, live ? "Live" : "Reconnecting…");
    liveBadge.className = `live${live ? "" : " down"}`;
  },
});

function navigate(first: boolean): void {
  const route = parseRoute(location.hash);
  const previous = state.route;
  state.route = route;
  const instanceId = route.view === "fleet" ? null : route.instanceId;
  if (previous.view === "fleet" || instanceId !== previous.instanceId) state.snapshot = null;
  document.title = route.view === "fleet" ? "Fleet · pdu-bridge" : `${route.instanceId} · pdu-bridge`;
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
