/**
 * The pdu-bridge web console (contract §9): fleet, PDU, groups and outlet views, live from
 * `GET /api/v1/events`, with control behind the API key and a confirmation. Hash routes:
 *
 *   #/                          fleet
 *   #/i/<instance>              PDU: devices, outlets, entities
 *   #/i/<instance>/groups       OneView groups
 *   #/i/<instance>/o/<dev>/<n>  one outlet and its power over the last hour
 *
 * Views build their elements once per structure (devices, outlets) and then only change text, so
 * values update without moving anything and keyboard focus stays where it is.
 */
import "./style.css";
import type {
  SnapshotEventData,
  WireDevice,
  WireEntity,
  WireGroup,
  WireInstanceStatus,
  WireMeasurement,
  WireOutlet,
} from "../wire.js";
import { ActivityPanel } from "./activity.js";
import { apiKey, Feed, outletHistory } from "./api.js";
import { PowerChart } from "./chart.js";
import { ACTION_VERBS, askForKey, confirmAction, ControlState, groupKeyOf, outletKey } from "./control.js";
import { age, append, h, num, replace, setText } from "./dom.js";
import { signedIn, signInEnabled, signOut, startSession } from "./session.js";

type Route =
  | { readonly view: "fleet" }
  | { readonly view: "pdu" | "groups"; readonly instanceId: string }
  | {
      readonly view: "outlet";
      readonly instanceId: string;
      readonly deviceId: string;
      readonly index: number;
    };

interface View {
  /** Called on every status or snapshot change and every second. */
  update(): void;
}

const state = {
  statuses: new Map<string, WireInstanceStatus>(),
  snapshot: null as SnapshotEventData | null,
  route: { view: "fleet" } as Route,
};

const href = {
  fleet: () => "#/",
  pdu: (id: string) => `#/i/${encodeURIComponent(id)}`,
  groups: (id: string) => `#/i/${encodeURIComponent(id)}/groups`,
  outlet: (id: string, deviceId: string, index: number) =>
    `#/i/${encodeURIComponent(id)}/o/${encodeURIComponent(deviceId)}/${index}`,
};

function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  try {
    const [kind, id, sub, deviceId, index] = parts.map(decodeURIComponent);
    if (kind === "i" && id !== undefined) {
      if (sub === undefined) return { view: "pdu", instanceId: id };
      if (sub === "groups") return { view: "groups", instanceId: id };
      if (sub === "o" && deviceId !== undefined && index !== undefined && /^\d{1,6}$/.test(index)) {
        return { view: "outlet", instanceId: id, deviceId, index: Number(index) };
      }
    }
  } catch {
    // a malformed escape: the fleet
  }
  return { view: "fleet" };
}

// ---- shell -------------------------------------------------------------------------------------

const root = document.getElementById("app")!;
const liveBadge = h("span", { class: "live", role: "status" }, "Connecting…");
const keyButton = h("button", { type: "button", class: "key-button", onClick: () => void toggleKey() });
const crumbs = h("nav", { "aria-label": "Breadcrumb", class: "crumbs" });
const main = h("main", { id: "main", tabindex: "-1" });
const activity = new ActivityPanel();
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
  main,
  activity.element,
]);

function skipToMain(event: Event): void {
  event.preventDefault();
  main.focus();
}

/** Whether this page may control: an operator's session with sign-in on, else an entered API key. */
function mayControl(): boolean {
  return signInEnabled() ? signedIn()?.role === "operator" : apiKey.get() !== null;
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

const controls = new ControlState(() => {
  renderKeyButton();
  view?.update();
});

// ---- shared pieces -----------------------------------------------------------------------------

const measurement = (list: readonly WireMeasurement[], type: string) => list.find((m) => m.type === type);

function statusText(s: WireInstanceStatus): string {
  return s.status === "online" ? "Online" : s.status === "failing" ? "Failing" : "Not polled yet";
}

function canControl(snapshot: SnapshotEventData, device: WireDevice): boolean {
  return snapshot.actionsEnabled && mayControl() && device.outletControlEnabled;
}

/** The line above a PDU's content: control on/off and the key. */
function controlNote(snapshot: SnapshotEventData): HTMLElement {
  if (!snapshot.actionsEnabled) {
    return h("p", { class: "note" }, "Control is off for this PDU (ActionsEnabled: false): values only.");
  }
  if (signInEnabled() && !mayControl()) {
    return h(
      "p",
      { class: "note" },
      `Signed in as ${signedIn()?.user.name ?? "a viewer"} with the viewer role: values only, no control.`,
    );
  }
  if (!mayControl()) {
    return h(
      "p",
      { class: "note" },
      "Enter the API key to switch, reboot or reset outlets. ",
      h("button", { type: "button", onClick: () => void toggleKey() }, "Enter API key"),
    );
  }
  return h("p", { class: "note" }, "Control is on: every action asks for confirmation first.");
}

function instanceHeader(instanceId: string, snapshot: SnapshotEventData | null, current: "pdu" | "groups") {
  const meta = h("p", { class: "meta" });
  const banner = h("p", { class: "banner", role: "alert", hidden: true });
  const tabs = h(
    "nav",
    { class: "tabs", "aria-label": "PDU views" },
    h("a", { href: href.pdu(instanceId), "aria-current": current === "pdu" ? "page" : null }, "Outlets"),
    snapshot?.mode === "oneview"
      ? h(
          "a",
          { href: href.groups(instanceId), "aria-current": current === "groups" ? "page" : null },
          "Groups",
        )
      : null,
  );
  const update = () => {
    const status = state.statuses.get(instanceId);
    const snap = state.snapshot;
    const unit = snap ? `${snap.unit.label || snap.unit.model} · ${snap.unit.model} · ${snap.mode}` : "";
    setText(
      meta,
      `${unit}${snap ? ` · snapshot ${age(snap.timestampUtc, Date.now())}` : " · not polled yet"}`,
    );
    const failing = status?.status === "failing";
    const login = status?.loginError ?? null;
    banner.hidden = !failing && login === null;
    setText(
      banner,
      [
        failing
          ? `Polling fails (${status.consecutiveFailures}×): ${status.lastError ?? "unknown error"}. Values are from the last good poll.`
          : "",
        login === null ? "" : `Control will fail: ${login}.`,
      ]
        .filter((t) => t !== "")
        .join(" "),
    );
  };
  update();
  return { elements: [h("h1", {}, instanceId), meta, banner, tabs], update };
}

function notReady(instanceId: string): HTMLElement {
  const status = state.statuses.get(instanceId);
  if (state.statuses.size > 0 && !status)
    return h("p", { class: "note" }, `No instance named ${instanceId}.`);
  return h(
    "p",
    { class: "note" },
    status?.lastError ? `Not polled yet: ${status.lastError}` : "Waiting for the first poll…",
  );
}

// ---- fleet -------------------------------------------------------------------------------------

function fleetView(): View {
  const summary = h("p", { class: "meta" });
  const body = h("tbody");
  const rows = new Map<string, { row: HTMLTableRowElement; cells: HTMLElement[]; error: HTMLElement }>();
  replace(
    main,
    h("h1", {}, "Fleet"),
    summary,
    h(
      "div",
      { class: "scroll" },
      h(
        "table",
        { class: "fleet" },
        h("caption", { class: "sr-only" }, "Every configured PDU instance and its poll status"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ...["Instance", "Status", "Last poll", "Failures", "Devices", "Outlets", "Power"].map((t) =>
              h("th", { scope: "col" }, t),
            ),
          ),
        ),
        body,
      ),
    ),
  );
  return {
    update() {
      const now = Date.now();
      const all = [...state.statuses.values()];
      const count = (s: string) => all.filter((i) => i.status === s).length;
      setText(
        summary,
        `${all.length} instances: ${count("online")} online, ${count("failing")} failing, ${count("pending")} not polled yet`,
      );
      for (const s of all) {
        let entry = rows.get(s.id);
        if (!entry) {
          const cells = [0, 1, 2, 3, 4, 5].map(() => h("td"));
          const error = h("span", { class: "error" });
          const badge = cells[0]!;
          const row = h(
            "tr",
            { "data-instance": s.id },
            h(
              "th",
              { scope: "row" },
              h("a", { href: href.pdu(s.id) }, s.id),
              h("span", { class: "sub" }, s.host),
            ),
            h("td", { class: "status" }, badge, error),
            ...cells.slice(1),
          );
          entry = { row, cells, error };
          rows.set(s.id, entry);
          body.appendChild(row);
        }
        const [badge, last, failures, devices, outlets, power] = entry.cells as [
          HTMLElement,
          HTMLElement,
          HTMLElement,
          HTMLElement,
          HTMLElement,
          HTMLElement,
        ];
        entry.row.className = s.status;
        badge.className = `badge ${s.status}`;
        setText(badge, statusText(s));
        entry.error.className = s.status !== "failing" && s.loginError !== null ? "error login" : "error";
        setText(
          entry.error,
          s.status === "failing"
            ? (s.lastError ?? "")
            : s.loginError !== null
              ? `Control will fail: ${s.loginError}`
              : "",
        );
        setText(last, age(s.lastPollUtc, now));
        setText(failures, String(s.consecutiveFailures));
        setText(devices, s.devices === null ? "–" : String(s.devices));
        setText(outlets, s.outlets === null ? "–" : String(s.outlets));
        setText(power, s.powerW === null ? "–" : `${num(s.powerW)} W`);
        for (const c of [last, failures, devices, outlets, power]) c.className = "n";
      }
    },
  };
}

// ---- PDU ---------------------------------------------------------------------------------------

interface OutletRefs {
  readonly device: WireDevice;
  readonly label: HTMLAnchorElement;
  readonly state: HTMLElement;
  readonly power: HTMLElement;
  readonly current: HTMLElement;
  readonly energy: HTMLElement;
  readonly note: HTMLElement;
  readonly buttons: HTMLButtonElement[];
}

function pendingText(key: string, outlet: WireOutlet): string {
  const pending = controls.pending.get(key);
  if (pending) return ACTION_VERBS[pending.action]?.[1] ?? "Pending…";
  return outlet.state;
}

async function outletAction(
  instanceId: string,
  device: WireDevice,
  outlet: WireOutlet,
  action: string,
): Promise<void> {
  const verb = ACTION_VERBS[action]?.[0] ?? action;
  const label = outlet.name;
  const pdu = state.snapshot?.mode === "oneview" ? `${instanceId} (member ${device.unit.label})` : instanceId;
  const confirmed = await confirmAction(
    `${verb} outlet ${outlet.index + 1}?`,
    [
      `${verb} outlet ${outlet.index + 1} “${label}” (index ${outlet.index}) of device ${device.name} (${device.id}) on PDU `,
      h("strong", {}, pdu),
      "?",
    ],
    `${verb} outlet ${outlet.index + 1}`,
  );
  if (!confirmed) return;
  await controls.run(
    [outletKey(instanceId, device.id, outlet.index)],
    instanceId,
    { deviceId: device.id, index: outlet.index },
    action,
  );
}

function outletCard(
  instanceId: string,
  device: WireDevice,
  outlet: WireOutlet,
  refs: Map<string, OutletRefs>,
) {
  const key = outletKey(instanceId, device.id, outlet.index);
  const value = () => h("dd", { class: "n" });
  const power = value();
  const current = value();
  const energy = value();
  const label = h("a", { href: href.outlet(instanceId, device.id, outlet.index), class: "label" });
  const stateBadge = h("span", { class: "badge" });
  const note = h("p", { class: "outlet-note", role: "status" });
  const snapshot = state.snapshot!;
  const buttons = canControl(snapshot, device)
    ? (["on", "off", "reboot", "resetStats"] as const).map((action) =>
        h(
          "button",
          {
            type: "button",
            "data-action": action,
            "aria-label": `${ACTION_VERBS[action]![0]} outlet ${outlet.index + 1}`,
            onClick: () => {
              const current = refs.get(key);
              const latest = state.snapshot?.devices
                .find((d) => d.id === device.id)
                ?.outlets.find((o) => o.index === outlet.index);
              void outletAction(instanceId, current?.device ?? device, latest ?? outlet, action);
            },
          },
          action === "resetStats" ? "Reset" : action === "reboot" ? "Reboot" : action === "on" ? "On" : "Off",
        ),
      )
    : [];
  refs.set(key, { device, label, state: stateBadge, power, current, energy, note, buttons });
  return h(
    "li",
    { class: "outlet", "data-outlet": `${device.id}/${outlet.index}` },
    h(
      "div",
      { class: "outlet-head" },
      h("span", { class: "num" }, String(outlet.index + 1)),
      label,
      stateBadge,
    ),
    h("dl", {}, h("dt", {}, "Power"), power, h("dt", {}, "Current"), current, h("dt", {}, "Energy"), energy),
    buttons.length > 0 ? h("div", { class: "actions" }, ...buttons) : null,
    note,
  );
}

function updateOutlet(instanceId: string, device: WireDevice, outlet: WireOutlet, refs: OutletRefs): void {
  const key = outletKey(instanceId, device.id, outlet.index);
  controls.settle(key, outlet, Date.now());
  const pending = controls.pending.has(key);
  setText(refs.label, outlet.name);
  setText(refs.state, pendingText(key, outlet));
  refs.state.className = `badge ${pending ? "pending" : outlet.state}`;
  const show = (type: string, units: string) => {
    const m = measurement(outlet.measurements, type);
    return m ? `${num(m.value, type === "energy" ? 2 : 1)} ${m.units || units}` : "–";
  };
  setText(refs.power, show("realPower", "W"));
  setText(refs.current, show("current", "A"));
  setText(refs.energy, show("energy", "kWh"));
  const note = controls.notes.get(key);
  setText(refs.note, note?.text ?? "");
  refs.note.className = `outlet-note${note?.error ? " error" : ""}`;
  for (const button of refs.buttons) button.disabled = pending;
}

/**
 * What the console shows: outlets, entities and groups hidden by the configuration's overrides are
 * left out of its grids and lists (the event stream marks them `hidden`, as REST does). A group's
 * member list still names a hidden member, since a group action switches it too.
 */
const shownOutlets = (device: WireDevice): readonly WireOutlet[] =>
  device.outlets.filter((o) => o.hidden !== true);
const shownEntities = (device: WireDevice): readonly WireEntity[] =>
  device.entities.filter((e) => e.hidden !== true);
const shownGroups = (snapshot: SnapshotEventData): readonly WireGroup[] =>
  snapshot.groups.filter((g) => g.hidden !== true);

function entityRows(device: WireDevice): HTMLTableRowElement[] {
  return shownEntities(device).map((entity) =>
    h(
      "tr",
      { class: entity.alarm.raised ? "alarm" : null },
      h("th", { scope: "row" }, entity.name, h("span", { class: "sub" }, entity.key)),
      h(
        "td",
        {},
        ...entity.measurements.map((m) =>
          h(
            "span",
            { class: `m${m.alarm?.raised ? " alarm" : ""}` },
            `${m.type} `,
            h("b", { class: "n" }, num(m.value, 2)),
            ` ${m.units}`,
          ),
        ),
      ),
      h(
        "td",
        {},
        entity.alarm.raised ? `${entity.alarm.state} (${entity.alarm.severity || "alarm"})` : "none",
      ),
    ),
  );
}

function unitLine(snapshot: SnapshotEventData, device: WireDevice): HTMLElement | null {
  if (snapshot.mode !== "oneview") return null;
  const u = device.unit;
  const role = u.hostKey === null ? "master" : "member";
  return h(
    "p",
    { class: "unit" },
    `On ${role} PDU `,
    h("strong", {}, u.label || u.serialNumber),
    ` · ${u.model} · serial ${u.serialNumber} · MAC ${u.macAddress}`,
  );
}

function pduView(instanceId: string): View {
  let shape = "";
  const refs = new Map<string, OutletRefs>();
  const entityBodies = new Map<string, HTMLTableSectionElement>();
  let header: ReturnType<typeof instanceHeader> | null = null;
  const build = (snapshot: SnapshotEventData | null) => {
    refs.clear();
    entityBodies.clear();
    header = instanceHeader(instanceId, snapshot, "pdu");
    if (!snapshot) {
      replace(main, ...header.elements, notReady(instanceId));
      return;
    }
    const sections = snapshot.devices.map((device) => {
      const body = h("tbody");
      entityBodies.set(device.id, body);
      const titleId = `device-${device.id}`;
      return h(
        "section",
        { class: "device", "aria-labelledby": titleId },
        h("h2", { id: titleId }, device.name, " ", h("span", { class: "sub" }, device.id)),
        unitLine(snapshot, device),
        device.alarm.raised ? h("p", { class: "banner" }, `Device alarm: ${device.alarm.state}`) : null,
        snapshot.actionsEnabled && !device.outletControlEnabled
          ? h(
              "p",
              { class: "note" },
              "Outlet control is disabled on this device (outletControlEnabled: false).",
            )
          : null,
        h("h3", {}, "Outlets"),
        h(
          "ul",
          { class: "outlets" },
          ...shownOutlets(device).map((o) => outletCard(instanceId, device, o, refs)),
        ),
        shownEntities(device).length > 0 ? h("h3", {}, "Phases, breakers and totals") : null,
        shownEntities(device).length > 0
          ? h(
              "div",
              { class: "scroll" },
              h(
                "table",
                { class: "entities" },
                h(
                  "thead",
                  {},
                  h(
                    "tr",
                    {},
                    h("th", { scope: "col" }, "Entity"),
                    h("th", { scope: "col" }, "Values"),
                    h("th", { scope: "col" }, "Alarm"),
                  ),
                ),
                body,
              ),
            )
          : null,
      );
    });
    replace(main, ...header.elements, controlNote(snapshot), ...sections);
  };
  return {
    update() {
      const snapshot = state.snapshot?.instanceId === instanceId ? state.snapshot : null;
      const next = snapshot
        ? JSON.stringify([
            snapshot.actionsEnabled,
            mayControl(),
            snapshot.mode,
            snapshot.devices.map((d) => [
              d.id,
              d.outletControlEnabled,
              d.unit,
              shownOutlets(d).map((o) => o.index),
              shownEntities(d).map((e) => e.key),
            ]),
          ])
        : "none";
      if (next !== shape || !header) {
        shape = next;
        build(snapshot);
      }
      header?.update();
      if (!snapshot) return;
      for (const device of snapshot.devices) {
        for (const outlet of shownOutlets(device)) {
          const r = refs.get(outletKey(instanceId, device.id, outlet.index));
          if (r) updateOutlet(instanceId, device, outlet, r);
        }
        const body = entityBodies.get(device.id);
        if (body) replace(body, ...entityRows(device));
      }
    },
  };
}

// ---- groups ------------------------------------------------------------------------------------

function memberName(snapshot: SnapshotEventData, ref: { deviceId: string; index: number }): string {
  const device = snapshot.devices.find((d) => d.id === ref.deviceId);
  const outlet = device?.outlets.find((o) => o.index === ref.index);
  const hidden = outlet?.hidden === true ? " (hidden)" : "";
  return `${device?.unit.label || ref.deviceId} outlet ${ref.index + 1}${outlet ? ` “${outlet.name}”` : ""}${hidden}`;
}

async function groupAction(instanceId: string, group: WireGroup, action: string): Promise<void> {
  const snapshot = state.snapshot;
  if (!snapshot) return;
  const verb = ACTION_VERBS[action]?.[0] ?? action;
  const members = group.members.map((m) => memberName(snapshot, m));
  const confirmed = await confirmAction(
    `${verb} group ${group.name}?`,
    [
      `${verb} every outlet of group “${group.name}” (${group.key}) on PDU `,
      h("strong", {}, instanceId),
      `: ${members.join(", ")}?`,
    ],
    `${verb} ${group.members.length} outlets`,
  );
  if (!confirmed) return;
  await controls.run([groupKeyOf(instanceId, group.key)], instanceId, { groupKey: group.key }, action);
}

function groupsView(instanceId: string): View {
  let shape = "";
  let header: ReturnType<typeof instanceHeader> | null = null;
  const parts = new Map<
    string,
    { body: HTMLTableSectionElement; note: HTMLElement; state: HTMLElement; buttons: HTMLButtonElement[] }
  >();
  const build = (snapshot: SnapshotEventData | null) => {
    parts.clear();
    header = instanceHeader(instanceId, snapshot, "groups");
    if (!snapshot) {
      replace(main, ...header.elements, notReady(instanceId));
      return;
    }
    if (snapshot.mode !== "oneview" || shownGroups(snapshot).length === 0) {
      const why =
        snapshot.mode === "oneview" && snapshot.groups.length > 0
          ? "Every group of this cluster is hidden by the configuration."
          : "This PDU is not a OneView cluster: it has no groups.";
      replace(main, ...header.elements, h("p", { class: "note" }, why));
      return;
    }
    const allowed = snapshot.actionsEnabled && mayControl();
    const sections = shownGroups(snapshot).map((group) => {
      const body = h("tbody");
      const note = h("p", { class: "outlet-note", role: "status" });
      const stateBadge = h("span", { class: "badge" });
      const buttons =
        allowed && group.members.length > 0
          ? (["on", "off", "reboot"] as const).map((action) =>
              h(
                "button",
                {
                  type: "button",
                  "data-action": action,
                  onClick: () => {
                    const latest = state.snapshot?.groups.find((g) => g.key === group.key) ?? group;
                    void groupAction(instanceId, latest, action);
                  },
                },
                `${ACTION_VERBS[action]![0]} all`,
              ),
            )
          : [];
      parts.set(group.key, { body, note, state: stateBadge, buttons });
      const titleId = `group-${group.key}`;
      return h(
        "section",
        { class: "group", "aria-labelledby": titleId },
        h("h2", { id: titleId }, group.name, " ", h("span", { class: "sub" }, group.key), " ", stateBadge),
        h(
          "p",
          { class: "members" },
          group.members.length === 0
            ? "No member outlets."
            : `Members: ${group.members.map((m) => memberName(snapshot, m)).join(", ")}`,
        ),
        h(
          "div",
          { class: "scroll" },
          h(
            "table",
            { class: "rollups" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ...["Measurement", "Sum", "Average", "Min", "Max"].map((t) => h("th", { scope: "col" }, t)),
              ),
            ),
            body,
          ),
        ),
        buttons.length > 0 ? h("div", { class: "actions" }, ...buttons) : null,
        note,
      );
    });
    replace(main, ...header.elements, controlNote(snapshot), ...sections);
  };
  return {
    update() {
      const snapshot = state.snapshot?.instanceId === instanceId ? state.snapshot : null;
      const next = snapshot
        ? JSON.stringify([
            snapshot.actionsEnabled,
            mayControl(),
            snapshot.mode,
            shownGroups(snapshot).map((g) => [g.key, g.name, g.members]),
          ])
        : "none";
      if (next !== shape || !header) {
        shape = next;
        build(snapshot);
      }
      header?.update();
      if (!snapshot) return;
      for (const group of shownGroups(snapshot)) {
        const part = parts.get(group.key);
        if (!part) continue;
        const key = groupKeyOf(instanceId, group.key);
        const pending = controls.pending.get(key);
        if (pending?.answered && pending.want !== null) {
          const all = group.members.every(
            (m) =>
              snapshot.devices.find((d) => d.id === m.deviceId)?.outlets.find((o) => o.index === m.index)
                ?.reported === pending.want,
          );
          if (all || Date.now() - pending.since > 120_000) {
            controls.pending.delete(key);
            controls.notes.set(key, {
              text: all
                ? `The PDU reports every outlet ${pending.want}.`
                : "The PDU has not reported the new state yet.",
              error: !all,
            });
          }
        }
        const current = controls.pending.get(key);
        setText(part.state, current ? (ACTION_VERBS[current.action]?.[1] ?? "Pending…") : group.state || "–");
        part.state.className = `badge ${current ? "pending" : group.state}`;
        const note = controls.notes.get(key);
        setText(part.note, note?.text ?? "");
        part.note.className = `outlet-note${note?.error ? " error" : ""}`;
        for (const b of part.buttons) b.disabled = current !== undefined;
        replace(
          part.body,
          ...group.measurements.map((m) =>
            h(
              "tr",
              {},
              h(
                "th",
                { scope: "row" },
                m.key === m.type ? m.type : `${m.type} (PDU totals)`,
                h("span", { class: "sub" }, m.units),
              ),
              ...[m.sum, m.avg, m.min, m.max].map((v) => h("td", { class: "n" }, num(v, 2))),
            ),
          ),
        );
      }
    },
  };
}

// ---- outlet ------------------------------------------------------------------------------------

function outletView(instanceId: string, deviceId: string, index: number): View {
  const chart = new PowerChart("Power over the last hour");
  const caption = h("figcaption", {});
  let shape = "";
  let header: ReturnType<typeof instanceHeader> | null = null;
  const refs = new Map<string, OutletRefs>();
  const values = h("tbody");
  let lastTimestamp = "";
  void outletHistory(instanceId, deviceId, index).then((history) => {
    if (history) {
      chart.set(history.times, history.values);
      chart.render(Date.now());
      setText(caption, `Power over the last hour (${chart.summary()})`);
    }
  });
  const build = (snapshot: SnapshotEventData | null) => {
    refs.clear();
    header = instanceHeader(instanceId, snapshot, "pdu");
    const device = snapshot?.devices.find((d) => d.id === deviceId);
    const outlet = device?.outlets.find((o) => o.index === index);
    if (!snapshot || !device || !outlet) {
      replace(
        main,
        ...header.elements,
        snapshot
          ? h("p", { class: "note" }, `No outlet ${index + 1} on device ${deviceId}.`)
          : notReady(instanceId),
      );
      return;
    }
    replace(
      main,
      h("h1", {}, `Outlet ${index + 1}: `, h("span", { class: "outlet-title" }, outlet.name)),
      h(
        "p",
        { class: "meta" },
        "PDU ",
        h("a", { href: href.pdu(instanceId) }, instanceId),
        ` · device ${device.name} (${device.id}) · index ${index}`,
      ),
      controlNote(snapshot),
      h("ul", { class: "outlets single" }, outletCard(instanceId, device, outlet, refs)),
      h("figure", { class: "chart-box" }, chart.element, caption),
      h("h2", {}, "All measurements"),
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          {},
          h(
            "thead",
            {},
            h("tr", {}, ...["Measurement", "Value", "Units"].map((t) => h("th", { scope: "col" }, t))),
          ),
          values,
        ),
      ),
    );
  };
  return {
    update() {
      const snapshot = state.snapshot?.instanceId === instanceId ? state.snapshot : null;
      const device = snapshot?.devices.find((d) => d.id === deviceId);
      const outlet = device?.outlets.find((o) => o.index === index);
      const next = snapshot
        ? JSON.stringify([
            snapshot.actionsEnabled,
            mayControl(),
            device?.outletControlEnabled,
            outlet !== undefined,
          ])
        : "none";
      if (next !== shape || !header) {
        shape = next;
        build(snapshot);
      }
      if (!snapshot || !device || !outlet) return;
      const r = refs.get(outletKey(instanceId, deviceId, index));
      if (r) updateOutlet(instanceId, device, outlet, r);
      if (snapshot.timestampUtc !== lastTimestamp) {
        lastTimestamp = snapshot.timestampUtc;
        chart.add(
          Date.parse(snapshot.timestampUtc),
          measurement(outlet.measurements, "realPower")?.value ?? null,
        );
        replace(
          values,
          ...outlet.measurements.map((m) =>
            h(
              "tr",
              {},
              h("th", { scope: "row" }, m.type),
              h("td", { class: "n" }, num(m.value, 3)),
              h("td", {}, m.units),
            ),
          ),
        );
      }
      chart.render(Date.now());
      setText(caption, `Power over the last hour (${chart.summary()})`);
    },
  };
}

// ---- wiring ------------------------------------------------------------------------------------

let view: View | null = null;

const feed = new Feed({
  status(data) {
    for (const s of data.instances) state.statuses.set(s.id, s);
    view?.update();
  },
  snapshot(data) {
    const route = state.route;
    if (route.view === "fleet" || data.instanceId !== route.instanceId) return;
    state.snapshot = data;
    view?.update();
  },
  control(data) {
    activity.add(data);
  },
  connection(live) {
    setText(liveBadge, live ? "Live" : "Reconnecting…");
    liveBadge.className = `live${live ? "" : " down"}`;
  },
});

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
  const route = state.route;
  if (route.view === "fleet") view = fleetView();
  else if (route.view === "outlet") view = outletView(route.instanceId, route.deviceId, route.index);
  else view = route.view === "pdu" ? pduView(route.instanceId) : groupsView(route.instanceId);
  view.update();
}

function navigate(): void {
  const route = parseRoute(location.hash);
  const previous = state.route;
  state.route = route;
  const instanceId = route.view === "fleet" ? null : route.instanceId;
  if (previous.view === "fleet" || instanceId !== previous.instanceId) state.snapshot = null;
  document.title = route.view === "fleet" ? "Fleet · pdu-bridge" : `${route.instanceId} · pdu-bridge`;
  renderCrumbs(route);
  rebuild();
  feed.open(instanceId);
  if (previous !== route) main.focus({ preventScroll: true });
}

window.addEventListener("hashchange", navigate);
window.setInterval(() => view?.update(), 1000);
await startSession();
renderKeyButton();
navigate();
