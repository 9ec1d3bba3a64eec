/** One outlet: its card and controls, its power since the data begins (at most an hour), every measurement. */
import type { SnapshotEventData } from "../../wire.js";
import { mayControl } from "../access.js";
import { outletHistory } from "../api.js";
import { PowerChart } from "../chart.js";
import type { ControlState } from "../control.js";
import { h, replace, setText } from "../dom.js";
import { measured, measurementName } from "../format.js";
import { href, state, type View } from "../state.js";
import { controlNote, instanceHeader, notReady, type InstanceHeader } from "./common.js";
import { hasOwnName, outletCard, type OutletCard } from "./outlet-card.js";

interface OutletPage {
  readonly header: InstanceHeader;
  readonly card: OutletCard | null;
}

/** The view's elements for this snapshot: the outlet's card, the chart and the measurements table. */
function outletPage(
  main: HTMLElement,
  controls: ControlState,
  where: { instanceId: string; deviceId: string; index: number },
  snapshot: SnapshotEventData | null,
  parts: { chart: PowerChart; caption: HTMLElement; values: HTMLElement },
): OutletPage {
  const { instanceId, deviceId, index } = where;
  const header = instanceHeader(instanceId, snapshot, "pdu");
  const device = snapshot?.devices.find((d) => d.id === deviceId);
  const outlet = device?.outlets.find((o) => o.index === index);
  if (!snapshot || !device || !outlet) {
    const why = snapshot
      ? h("p", { class: "note" }, `No outlet ${index + 1} on device ${deviceId}.`)
      : notReady(instanceId);
    replace(main, ...header.elements, why);
    return { header, card: null };
  }
  const controllable = snapshot.actionsEnabled && mayControl() && device.outletControlEnabled;
  const card = outletCard(controls, instanceId, device, outlet, controllable);
  const { chart, caption, values } = parts;
  replace(
    main,
    h(
      "h1",
      {},
      `Outlet ${index + 1}`,
      hasOwnName(outlet) ? h("span", { class: "outlet-title" }, ` · ${outlet.name}`) : "",
    ),
    h(
      "p",
      { class: "meta" },
      "PDU ",
      h("a", { href: href.pdu(instanceId) }, instanceId),
      ` · device ${device.name} (${device.id}) · index ${index}`,
    ),
    // The header's banner: offline or stale, with the data's age.
    ...header.elements.slice(2, 3),
    controlNote(snapshot),
    h("ul", { class: "outlets single" }, card.element),
    h("figure", { class: "chart-box" }, chart.element, chart.readout, caption),
    h("h2", {}, "All measurements"),
    h(
      "div",
      { class: "scroll" },
      h(
        "table",
        { class: "values" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Measurement"),
            h("th", { scope: "col", class: "n" }, "Value"),
          ),
        ),
        values,
      ),
    ),
  );
  return { header, card };
}

export function outletView(
  main: HTMLElement,
  controls: ControlState,
  instanceId: string,
  deviceId: string,
  index: number,
): View {
  const chart = new PowerChart("Power of the outlet");
  const caption = h("figcaption", {});
  const values = h("tbody");
  let shape = "";
  let page: OutletPage | null = null;
  let lastTimestamp = "";
  void outletHistory(instanceId, deviceId, index).then((history) => {
    if (history) {
      chart.set(history.times, history.values);
      chart.render(Date.now());
      setText(caption, `Power (${chart.summary()})`);
    }
  });
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
            device?.canResetOutletEnergy,
            device?.canSwitchOutlets,
            outlet !== undefined,
            outlet !== undefined && hasOwnName(outlet),
          ])
        : "none";
      if (next !== shape || !page) {
        shape = next;
        page = outletPage(main, controls, { instanceId, deviceId, index }, snapshot, {
          chart,
          caption,
          values,
        });
      }
      page.header.update();
      if (!snapshot || !device || !outlet) return;
      page.card?.update(device, outlet);
      if (snapshot.timestampUtc !== lastTimestamp) {
        lastTimestamp = snapshot.timestampUtc;
        const power = outlet.measurements.find((m) => m.type === "realPower")?.value ?? null;
        chart.add(Date.parse(snapshot.timestampUtc), power);
        replace(
          values,
          ...outlet.measurements.map((m) =>
            h(
              "tr",
              {},
              h("th", { scope: "row" }, measurementName(m.type)),
              h("td", { class: "n" }, measured(m.value, m.type, m.units)),
            ),
          ),
        );
      }
      chart.render(Date.now());
      setText(caption, `Power (${chart.summary()})`);
    },
  };
}
