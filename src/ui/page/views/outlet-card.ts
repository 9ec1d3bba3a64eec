/**
 * One outlet as a card (number, label, state, power, current, energy, its load bar where rated,
 * its buttons and the outcome of its last command), and the confirmation of an outlet command.
 */
import type { SnapshotEventData, WireCommand, WireDevice, WireOutlet } from "../../wire.js";
import { mayControl } from "../access.js";
import { loadBar, type LoadBar } from "../bar.js";
import { confirmAction } from "../confirm.js";
import type { ControlState } from "../control.js";
import { commandButtons, outletKey, progressOf, updateButtons } from "../control.js";
import { h, setClass, setText } from "../dom.js";
import { measured } from "../format.js";
import { href, outletCommandsOf, state } from "../state.js";

export interface OutletCard {
  readonly element: HTMLElement;
  update(device: WireDevice, outlet: WireOutlet): void;
}

const measurement = (outlet: WireOutlet, type: string) => outlet.measurements.find((m) => m.type === type);

/** Whether the outlet's label is more than its default name ("Outlet 3"). */
export const hasOwnName = (outlet: WireOutlet): boolean => outlet.name !== `Outlet ${outlet.index + 1}`;

/** "the master unit “Rack PDU A”" / "member unit “Rack PDU B”" of a OneView cluster, else "". */
export function unitOfDevice(snapshot: SnapshotEventData, device: WireDevice): string {
  if (snapshot.mode !== "oneview") return "";
  const label = device.unit.label || device.unit.serialNumber || device.id;
  return device.unit.hostKey === null ? `master unit “${label}”` : `member unit “${label}”`;
}

async function outletAction(
  controls: ControlState,
  instanceId: string,
  device: WireDevice,
  outlet: WireOutlet,
  row: WireCommand,
): Promise<void> {
  const snapshot = state.snapshot;
  const number = outlet.index + 1;
  const unit = snapshot ? unitOfDevice(snapshot, device) : "";
  const confirmed = await confirmAction(
    `${row.verb} outlet ${number}?`,
    [
      `${row.verb} outlet ${number} “${outlet.name}” (index ${outlet.index}) of device ${device.name} (${device.id}) on PDU `,
      h("strong", {}, instanceId),
      unit === "" ? "" : `, ${unit}`,
      "?",
    ],
    `${row.verb} outlet ${number}`,
    row.tone,
  );
  if (!confirmed) return;
  await controls.run(
    [outletKey(instanceId, device.id, outlet.index)],
    instanceId,
    { deviceId: device.id, index: outlet.index },
    row.name,
  );
}

export function outletCard(
  controls: ControlState,
  instanceId: string,
  device: WireDevice,
  outlet: WireOutlet,
  controllable: boolean,
): OutletCard {
  const key = outletKey(instanceId, device.id, outlet.index);
  const power = h("dd", { class: "n" });
  const current = h("dd", { class: "n" });
  const energy = h("dd", { class: "n" });
  const label = h("a", { href: href.outlet(instanceId, device.id, outlet.index), class: "label" });
  const badge = h("span", { class: "badge" });
  const note = h("p", { class: "outlet-note", role: "status" });
  let bar: LoadBar | null = null;
  const barRow = h("div", { class: "outlet-load", hidden: true });
  let latest = { device, outlet };
  const buttons = controllable
    ? commandButtons(
        outletCommandsOf(device),
        (row) => `${row.label} outlet ${outlet.index + 1}`,
        (row) => void outletAction(controls, instanceId, latest.device, latest.outlet, row),
      )
    : [];
  const element = h(
    "li",
    { class: "outlet", "data-outlet": `${device.id}/${outlet.index}` },
    h("div", { class: "outlet-head" }, h("span", { class: "num" }, String(outlet.index + 1)), label, badge),
    h("dl", {}, h("dt", {}, "Power"), power, h("dt", {}, "Current"), current, h("dt", {}, "Energy"), energy),
    barRow,
    buttons.length > 0 ? h("div", { class: "actions" }, ...buttons) : null,
    note,
  );
  return {
    element,
    update(d, o) {
      latest = { device: d, outlet: o };
      controls.settle(key, o, Date.now());
      const pending = controls.pending.get(key);
      setText(label, o.name);
      setText(badge, pending ? progressOf(pending.action) : o.state);
      setClass(badge, `badge ${pending ? "pending" : o.state}`);
      const show = (type: string) => {
        const m = measurement(o, type);
        return m ? measured(m.value, m.type, m.units) : "–";
      };
      setText(power, show("realPower"));
      setText(current, show("current"));
      setText(energy, show("energy"));
      if (o.load !== null && o.load.rating !== null) {
        if (bar === null) {
          bar = loadBar();
          barRow.append(bar.element, bar.text);
        }
        bar.update(o.load, `Outlet ${o.index + 1}`);
        barRow.hidden = false;
      } else barRow.hidden = true;
      const n = controls.notes.get(key);
      setText(note, n?.text ?? "");
      setClass(note, `outlet-note${n?.error ? " error" : ""}`);
      updateButtons(buttons, o.state, pending !== undefined || !mayControl());
    },
  };
}
