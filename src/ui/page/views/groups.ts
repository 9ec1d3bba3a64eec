/**
 * The OneView groups of an instance: each group's state, its member outlets as a table (unit,
 * outlet, state, power, with links), its rollups, and the group commands. The built-in `total`
 * group is every outlet of the cluster; a group without members says so instead of an empty table.
 */
import type { SnapshotEventData, WireGroup } from "../../wire.js";
import { mayControl } from "../access.js";
import { confirmAction } from "../confirm.js";
import type { ControlState } from "../control.js";
import { commandButtons, groupKeyOf, progressOf } from "../control.js";
import { h, replace, setClass, setText } from "../dom.js";
import { measured, measurementName, watts } from "../format.js";
import { commandsOf, href, state, type View } from "../state.js";
import { controlNote, instanceHeader, notReady, type InstanceHeader } from "./common.js";

const shownGroups = (snapshot: SnapshotEventData): readonly WireGroup[] =>
  snapshot.groups.filter((g) => g.hidden !== true);

/** The member outlets of a group: the built-in `total` is every outlet of the cluster. */
function membersOf(snapshot: SnapshotEventData, group: WireGroup): { deviceId: string; index: number }[] {
  if (group.members.length > 0 || group.key.toLowerCase() !== "total") return [...group.members];
  return snapshot.devices.flatMap((d) => d.outlets.map((o) => ({ deviceId: d.id, index: o.index })));
}

function memberName(snapshot: SnapshotEventData, ref: { deviceId: string; index: number }): string {
  const device = snapshot.devices.find((d) => d.id === ref.deviceId);
  const outlet = device?.outlets.find((o) => o.index === ref.index);
  const hidden = outlet?.hidden === true ? " (hidden)" : "";
  return `${device?.unit.label || ref.deviceId} outlet ${ref.index + 1}${outlet ? ` “${outlet.name}”` : ""}${hidden}`;
}

async function groupAction(
  controls: ControlState,
  instanceId: string,
  group: WireGroup,
  action: string,
  verb: string,
  tone: string,
): Promise<void> {
  const snapshot = state.snapshot;
  if (!snapshot) return;
  const members = group.members.map((m) => memberName(snapshot, m));
  const confirmed = await confirmAction(
    `${verb} group ${group.name}?`,
    [
      `${verb} every outlet of group “${group.name}” (${group.key}) on PDU `,
      h("strong", {}, instanceId),
      `: ${members.join(", ")}?`,
    ],
    `${verb} ${group.members.length} outlets`,
    tone,
  );
  if (!confirmed) return;
  await controls.run([groupKeyOf(instanceId, group.key)], instanceId, { groupKey: group.key }, action);
}

interface GroupParts {
  readonly members: HTMLTableSectionElement | null;
  readonly rollups: HTMLTableSectionElement | null;
  readonly note: HTMLElement;
  readonly badge: HTMLElement;
  readonly buttons: HTMLButtonElement[];
}

function memberRows(
  instanceId: string,
  snapshot: SnapshotEventData,
  group: WireGroup,
): HTMLTableRowElement[] {
  return membersOf(snapshot, group).map((m) => {
    const device = snapshot.devices.find((d) => d.id === m.deviceId);
    const outlet = device?.outlets.find((o) => o.index === m.index);
    const power = outlet?.measurements.find((x) => x.type === "realPower")?.value ?? null;
    return h(
      "tr",
      {},
      h("th", { scope: "row" }, device?.unit.label || m.deviceId),
      h(
        "td",
        {},
        h("a", { href: href.outlet(instanceId, m.deviceId, m.index) }, `${m.index + 1}`),
        outlet ? ` ${outlet.name}${outlet.hidden === true ? " (hidden)" : ""}` : "",
      ),
      h("td", {}, h("span", { class: `badge ${outlet?.state ?? "unknown"}` }, outlet?.state ?? "unknown")),
      h("td", { class: "n" }, watts(power)),
    );
  });
}

function rollupRows(group: WireGroup): HTMLTableRowElement[] {
  return group.measurements.map((m) =>
    h(
      "tr",
      {},
      h(
        "th",
        { scope: "row" },
        m.key === m.type ? measurementName(m.type) : `${measurementName(m.type)} (PDU totals)`,
      ),
      ...[m.sum, m.avg, m.min, m.max].map((v) => h("td", { class: "n" }, measured(v, m.type, m.units))),
    ),
  );
}

function membersTable(body: HTMLTableSectionElement): HTMLElement {
  const col = (title: string, cls?: string) =>
    h("th", { scope: "col", ...(cls ? { class: cls } : {}) }, title);
  return h(
    "div",
    { class: "scroll" },
    h(
      "table",
      { class: "members-table" },
      h("thead", {}, h("tr", {}, col("Unit"), col("Outlet"), col("State"), col("Power", "n"))),
      body,
    ),
  );
}

function rollupsTable(body: HTMLTableSectionElement): HTMLElement {
  return h(
    "table",
    { class: "rollups" },
    h("caption", {}, "Rollups of the group's outlets"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Measurement"),
        ...["Sum", "Average", "Min", "Max"].map((t) => h("th", { scope: "col", class: "n" }, t)),
      ),
    ),
    body,
  );
}

function groupSection(
  controls: ControlState,
  instanceId: string,
  snapshot: SnapshotEventData,
  group: WireGroup,
  parts: Map<string, GroupParts>,
): HTMLElement {
  const members = membersOf(snapshot, group);
  const memberBody = members.length > 0 ? h("tbody") : null;
  const rollupBody = group.measurements.length > 0 ? h("tbody") : null;
  const note = h("p", { class: "outlet-note", role: "status" });
  const badge = h("span", { class: "badge" });
  const allowed = snapshot.actionsEnabled && mayControl() && group.members.length > 0;
  const buttons = allowed
    ? commandButtons(
        commandsOf("group"),
        (row) => `${row.label} of group ${group.name}`,
        (row) => {
          const latest = state.snapshot?.groups.find((g) => g.key === group.key) ?? group;
          void groupAction(controls, instanceId, latest, row.name, row.verb, row.tone);
        },
      )
    : [];
  parts.set(group.key, { members: memberBody, rollups: rollupBody, note, badge, buttons });
  const titleId = `group-${group.key}`;
  const total = group.key.toLowerCase() === "total" && group.members.length === 0;
  return h(
    "section",
    { class: "group", "aria-labelledby": titleId },
    h("h2", { id: titleId }, group.name, " ", h("span", { class: "sub" }, group.key), " ", badge),
    h(
      "p",
      { class: "members" },
      total
        ? `Every outlet of the cluster (${members.length}).`
        : members.length === 0
          ? "No outlets are in this group."
          : `${members.length} member outlet${members.length === 1 ? "" : "s"}.`,
    ),
    memberBody ? membersTable(memberBody) : null,
    rollupBody
      ? rollupsTable(rollupBody)
      : h("p", { class: "note" }, "The PDU reports no rollups for this group."),
    buttons.length > 0 ? h("div", { class: "actions" }, ...buttons) : null,
    note,
  );
}

/** Ends a group's pending on/off once the PDU reports every member in the state asked for. */
function settleGroup(
  controls: ControlState,
  key: string,
  snapshot: SnapshotEventData,
  group: WireGroup,
): void {
  const pending = controls.pending.get(key);
  if (!pending?.answered || pending.want === null) return;
  const all = group.members.every(
    (m) =>
      snapshot.devices.find((d) => d.id === m.deviceId)?.outlets.find((o) => o.index === m.index)
        ?.reported === pending.want,
  );
  if (!all && Date.now() - pending.since <= 120_000) return;
  controls.pending.delete(key);
  controls.notes.set(key, {
    text: all
      ? `The PDU reports every outlet ${pending.want}.`
      : "The PDU has not reported the new state yet.",
    error: !all,
  });
}

export function groupsView(main: HTMLElement, controls: ControlState, instanceId: string): View {
  let shape = "";
  let header: InstanceHeader | null = null;
  const parts = new Map<string, GroupParts>();
  let last: SnapshotEventData | null = null;
  const build = (snapshot: SnapshotEventData | null) => {
    parts.clear();
    header = instanceHeader(instanceId, snapshot, "groups");
    if (!snapshot) return replace(main, ...header.elements, notReady(instanceId));
    if (snapshot.mode !== "oneview" || shownGroups(snapshot).length === 0) {
      const why =
        snapshot.mode === "oneview" && snapshot.groups.length > 0
          ? "Every group of this cluster is hidden by the configuration."
          : "This PDU is not a OneView cluster: it has no groups.";
      return replace(main, ...header.elements, h("p", { class: "note" }, why));
    }
    replace(
      main,
      ...header.elements,
      controlNote(snapshot),
      ...shownGroups(snapshot).map((g) => groupSection(controls, instanceId, snapshot, g, parts)),
    );
  };
  return {
    update() {
      const snapshot = state.snapshot?.instanceId === instanceId ? state.snapshot : null;
      const next = snapshot
        ? JSON.stringify([
            snapshot.actionsEnabled,
            mayControl(),
            snapshot.mode,
            shownGroups(snapshot).map((g) => [g.key, g.name, g.members, g.measurements.length]),
          ])
        : "none";
      if (next !== shape || !header) {
        shape = next;
        build(snapshot);
        last = null;
      }
      header?.update();
      if (!snapshot) return;
      const fresh = snapshot !== last;
      last = snapshot;
      for (const group of shownGroups(snapshot)) {
        const part = parts.get(group.key);
        if (!part) continue;
        const key = groupKeyOf(instanceId, group.key);
        settleGroup(controls, key, snapshot, group);
        const pending = controls.pending.get(key);
        setText(part.badge, pending ? progressOf(pending.action) : group.state || "–");
        setClass(part.badge, `badge ${pending ? "pending" : group.state === "normal" ? "ok" : "neutral"}`);
        const note = controls.notes.get(key);
        setText(part.note, note?.text ?? "");
        setClass(part.note, `outlet-note${note?.error ? " error" : ""}`);
        for (const b of part.buttons) b.disabled = pending !== undefined;
        if (fresh) {
          if (part.members) replace(part.members, ...memberRows(instanceId, snapshot, group));
          if (part.rollups) replace(part.rollups, ...rollupRows(group));
        }
      }
    },
  };
}
