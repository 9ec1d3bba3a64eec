/**
 * The PDU view: the instance's totals on top, its active alarms, then each device with a bar per
 * phase and breaker against its rating, its outlets as cards and its other measurements. Built once
 * per structure (devices, outlets, entities), then only updated in place.
 */
import type { SnapshotEventData, WireDevice, WireEntity, WireOutlet } from "../../wire.js";
import { mayControl } from "../access.js";
import { loadBar, type LoadBar } from "../bar.js";
import type { ControlState } from "../control.js";
import { outletKey } from "../control.js";
import { h, replace, setClass, setText } from "../dom.js";
import { alarmCause, alarmPlace } from "../events-panel.js";
import { ago, measured, measurementName, watts } from "../format.js";
import { state, type View } from "../state.js";
import { controlNote, instanceHeader, notReady, type InstanceHeader } from "./common.js";
import { outletCard, unitOfDevice, type OutletCard } from "./outlet-card.js";

/** What the console shows: things hidden by the overrides are left out. */
export const shownOutlets = (d: WireDevice): readonly WireOutlet[] =>
  d.outlets.filter((o) => o.hidden !== true);
export const shownEntities = (d: WireDevice): readonly WireEntity[] =>
  d.entities.filter((e) => e.hidden !== true);

const value = (list: WireEntity["measurements"], type: string) =>
  list.find((m) => m.type.toLowerCase() === type.toLowerCase())?.value ?? null;

/** Adds up a measurement of every device: its `total` entity's where it has one, else its outlets'. */
function sumOf(snapshot: SnapshotEventData, type: string, fromOutlets: boolean): number | null {
  let sum: number | null = null;
  for (const d of snapshot.devices) {
    const total = d.entities.find((e) => e.key.startsWith("total"));
    let v = total ? value(total.measurements, type) : null;
    if (v === null && fromOutlets) {
      for (const o of d.outlets) {
        const x = value(o.measurements, type);
        if (x !== null) v = (v ?? 0) + x;
      }
    }
    if (v !== null) sum = (sum ?? 0) + v;
  }
  return sum;
}

/** Sums of the instance, and its outlets that are on. */
function totals(snapshot: SnapshotEventData) {
  let on = 0;
  let outlets = 0;
  for (const d of snapshot.devices) {
    for (const o of shownOutlets(d)) {
      outlets++;
      if (o.state === "on") on++;
    }
  }
  return {
    power: sumOf(snapshot, "realPower", true),
    apparent: sumOf(snapshot, "apparentPower", true),
    energy: sumOf(snapshot, "energy", false),
    on,
    outlets,
  };
}

interface Figure {
  readonly element: HTMLElement;
  readonly value: HTMLElement;
}

function figure(label: string): Figure {
  const v = h("dd", { class: "n" });
  return { element: h("div", { class: "figure" }, h("dt", {}, label), v), value: v };
}

function totalsBlock() {
  const power = figure("Power");
  const apparent = figure("Apparent power");
  const energy = figure("Energy");
  const outlets = figure("Outlets on");
  const peak = figure("Most loaded");
  const element = h(
    "dl",
    { class: "totals", "aria-label": "Totals of the PDU" },
    power.element,
    apparent.element,
    energy.element,
    outlets.element,
    peak.element,
  );
  return {
    element,
    update(snapshot: SnapshotEventData) {
      const t = totals(snapshot);
      setText(power.value, watts(t.power));
      setText(apparent.value, measured(t.apparent, "apparentPower", "VA"));
      setText(energy.value, measured(t.energy, "energy", "kWh"));
      setText(outlets.value, `${t.on} of ${t.outlets}`);
      const p = state.statuses.get(snapshot.instanceId)?.peak ?? null;
      setText(
        peak.value,
        p === null
          ? "–"
          : p.percent === null
            ? `${p.name}: ${measured(p.current, "current", "A")}`
            : `${p.name}: ${p.percent} %`,
      );
      setClass(peak.value, `n ${p?.state ?? ""}`.trim());
    },
  };
}

function alarmsBlock(instanceId: string) {
  const list = h("ul", { class: "alarm-list" });
  const title = h("h2", { id: "pdu-alarms-title" }, "Active alarms");
  const element = h(
    "section",
    { class: "pdu-alarms", "aria-labelledby": "pdu-alarms-title", hidden: true },
    title,
    list,
  );
  return {
    element,
    update(snapshot: SnapshotEventData) {
      element.hidden = snapshot.alarms.length === 0;
      setText(title, `Active alarms (${snapshot.alarms.length})`);
      const now = Date.now();
      replace(
        list,
        ...snapshot.alarms.map((a) =>
          h(
            "li",
            { class: `alarm-item ${a.severity}` },
            h("span", { class: `badge ${a.severity}` }, a.severity),
            h(
              "span",
              { class: "what" },
              `${alarmPlace(a)}: ${alarmCause(a)}`,
              h("span", { class: "sub" }, `since ${ago(a.sinceUtc, now)} · ${instanceId}`),
            ),
          ),
        ),
      );
    },
  };
}

interface DeviceParts {
  readonly bars: Map<string, LoadBar>;
  readonly cards: Map<string, OutletCard>;
  readonly measurements: HTMLTableSectionElement;
}

function loadRows(device: WireDevice, bars: Map<string, LoadBar>): HTMLElement | null {
  const loaded = shownEntities(device).filter((e) => e.load !== null);
  if (loaded.length === 0) return null;
  return h(
    "ul",
    { class: "loads" },
    ...loaded.map((e) => {
      const bar = loadBar();
      bars.set(e.key, bar);
      return h(
        "li",
        { class: "load-row", "data-entity": e.key },
        h("span", { class: "load-name" }, e.name, h("span", { class: "sub" }, e.key)),
        bar.element,
        bar.text,
      );
    }),
  );
}

function measurementRows(device: WireDevice): HTMLTableRowElement[] {
  return shownEntities(device).map((e) =>
    h(
      "tr",
      { class: e.alarm.raised ? "alarm" : null },
      h("th", { scope: "row" }, e.name, h("span", { class: "sub" }, e.key)),
      h(
        "td",
        {},
        ...e.measurements.map((m) =>
          h(
            "span",
            { class: `m${m.alarm?.raised ? " alarm" : ""}` },
            `${measurementName(m.type)} `,
            h("span", { class: "n" }, measured(m.value, m.type, m.units)),
          ),
        ),
      ),
      h("td", {}, e.alarm.raised ? `${e.alarm.state} (${e.alarm.severity || "alarm"})` : "–"),
    ),
  );
}

function deviceSection(
  controls: ControlState,
  snapshot: SnapshotEventData,
  device: WireDevice,
  parts: Map<string, DeviceParts>,
): HTMLElement {
  const bars = new Map<string, LoadBar>();
  const cards = new Map<string, OutletCard>();
  const measurements = h("tbody");
  parts.set(device.id, { bars, cards, measurements });
  const controllable = snapshot.actionsEnabled && mayControl() && device.outletControlEnabled;
  const unit = unitOfDevice(snapshot, device);
  const loads = loadRows(device, bars);
  const outlets = shownOutlets(device);
  return h(
    "section",
    { class: "device", "aria-labelledby": `device-${device.id}` },
    h("h2", { id: `device-${device.id}` }, device.name, " ", h("span", { class: "sub" }, device.id)),
    h(
      "p",
      { class: "unit" },
      [
        unit === "" ? device.unit.label : unit,
        device.unit.model,
        device.unit.serialNumber && `serial ${device.unit.serialNumber}`,
        device.unit.macAddress && `MAC ${device.unit.macAddress}`,
      ]
        .filter(Boolean)
        .join(" · "),
    ),
    device.alarm.raised ? h("p", { class: "banner" }, `Device alarm: ${device.alarm.state}`) : null,
    snapshot.actionsEnabled && !device.outletControlEnabled
      ? h("p", { class: "note" }, "Outlet control is disabled on this device (outletControlEnabled: false).")
      : null,
    loads ? h("h3", {}, "Phases and breakers") : null,
    loads,
    h("h3", {}, `Outlets (${outlets.length})`),
    h(
      "ul",
      { class: "outlets" },
      ...outlets.map((o) => {
        const card = outletCard(controls, snapshot.instanceId, device, o, controllable);
        cards.set(outletKey(snapshot.instanceId, device.id, o.index), card);
        return card.element;
      }),
    ),
    shownEntities(device).length > 0 ? h("h3", {}, "All measurements of phases, breakers and totals") : null,
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
            measurements,
          ),
        )
      : null,
  );
}

/** What decides the view's elements (values are updated in place). */
function shapeOf(snapshot: SnapshotEventData | null): string {
  if (snapshot === null) return "none";
  return JSON.stringify([
    snapshot.actionsEnabled,
    mayControl(),
    snapshot.mode,
    snapshot.devices.map((d) => [
      d.id,
      d.name,
      d.alarm.raised,
      d.outletControlEnabled,
      d.canResetOutletEnergy,
      d.canSwitchOutlets,
      d.unit,
      shownOutlets(d).map((o) => o.index),
      shownEntities(d).map((e) => [e.key, e.load !== null]),
    ]),
  ]);
}

export function pduView(main: HTMLElement, controls: ControlState, instanceId: string): View {
  let shape = "";
  let header: InstanceHeader | null = null;
  let totalsPart: ReturnType<typeof totalsBlock> | null = null;
  let alarmsPart: ReturnType<typeof alarmsBlock> | null = null;
  const parts = new Map<string, DeviceParts>();
  const build = (snapshot: SnapshotEventData | null) => {
    parts.clear();
    header = instanceHeader(instanceId, snapshot, "pdu");
    if (!snapshot) {
      totalsPart = null;
      alarmsPart = null;
      replace(main, ...header.elements, notReady(instanceId));
      return;
    }
    totalsPart = totalsBlock();
    alarmsPart = alarmsBlock(instanceId);
    replace(
      main,
      ...header.elements,
      totalsPart.element,
      alarmsPart.element,
      controlNote(snapshot),
      ...snapshot.devices.map((d) => deviceSection(controls, snapshot, d, parts)),
    );
  };
  let lastSnapshot: SnapshotEventData | null = null;
  return {
    update() {
      const snapshot = state.snapshot?.instanceId === instanceId ? state.snapshot : null;
      const next = shapeOf(snapshot);
      if (next !== shape || !header) {
        shape = next;
        build(snapshot);
        lastSnapshot = null;
      }
      header?.update();
      if (!snapshot) return;
      totalsPart?.update(snapshot);
      const fresh = snapshot !== lastSnapshot;
      lastSnapshot = snapshot;
      if (fresh) alarmsPart?.update(snapshot);
      for (const device of snapshot.devices) {
        const p = parts.get(device.id);
        if (!p) continue;
        for (const outlet of shownOutlets(device))
          p.cards.get(outletKey(instanceId, device.id, outlet.index))?.update(device, outlet);
        for (const e of shownEntities(device)) p.bars.get(e.key)?.update(e.load, e.name);
        if (fresh) replace(p.measurements, ...measurementRows(device));
      }
    },
  };
}
