/**
 * A simulated Eaton G3 switched ePDU (EATON-EPDU-MIB): two units strapped behind one address
 * (strapping indexes 0 and 1), each with one single-phase input, one breaker and one outlet
 * section as groups, and half of the unit's outlets, in the shape the MIB gives (unitTable,
 * unitControlTable, the input, group and outlet tables with their thresholds; -1 where the MIB says
 * "not available"; the control commands read -1, no command pending).
 */
import { TableBuilder, type Cell, type FamilyView, type SimContent, type SimScalar } from "./tables.js";

const I = "Integer";
const S = "OctetString";
const G = "Gauge";
const C = "Counter";
const EP = "1.3.6.1.4.1.534.6.6.7";
const UNITS = [0, 1] as const;
const RESET_TIME = 1_700_000_000;

/** outletControlOffCmd (3), outletControlOnCmd (4), outletControlRebootCmd (5): 0 is "now". */
export function eatonCommand(value: number, column: number | undefined): "on" | "off" | "reboot" | null {
  if (value !== 0) return null;
  return column === 3 ? "off" : column === 4 ? "on" : column === 5 ? "reboot" : null;
}

export function eatonDefaultName(n: number): string {
  return n === 2 ? "web-03" : `Outlet ${n}`;
}

export function eatonContent(u: FamilyView): SimContent {
  const perUnit = Math.floor(u.outlets.length / UNITS.length);
  const scalars: SimScalar[] = [
    ...u.system("Eaton ePDU MA 1P IN:C20 16A OUT:8xC13", `${EP}`, "eaton-rack-h"),
    { oid: `${EP}.1.1.0`, type: S, value: UNITS.join(",") },
  ];
  const t = {
    unit: new TableBuilder(`${EP}.1.2.1`, 1),
    unitControl: new TableBuilder(`${EP}.1.3.1`, 1),
    input: new TableBuilder(`${EP}.3.1.1`, 2),
    inVolt: new TableBuilder(`${EP}.3.2.1`, 3),
    inCurr: new TableBuilder(`${EP}.3.3.1`, 3),
    inPower: new TableBuilder(`${EP}.3.4.1`, 3),
    inTotal: new TableBuilder(`${EP}.3.5.1`, 2),
    group: new TableBuilder(`${EP}.5.1.1`, 2),
    grVolt: new TableBuilder(`${EP}.5.3.1`, 2),
    grCurr: new TableBuilder(`${EP}.5.4.1`, 2),
    grPower: new TableBuilder(`${EP}.5.5.1`, 2),
    outlet: new TableBuilder(`${EP}.6.1.1`, 2),
    outVolt: new TableBuilder(`${EP}.6.3.1`, 2),
    outCurr: new TableBuilder(`${EP}.6.4.1`, 2),
    outPower: new TableBuilder(`${EP}.6.5.1`, 2),
    outCtl: new TableBuilder(`${EP}.6.6.1`, 2),
  };
  for (const strap of UNITS) {
    const first = strap * perUnit;
    let tenths = 0;
    for (let i = first; i < first + perUnit; i++) tenths += u.tenths(i);
    const wh = u32(u.outlets.slice(first, first + perUnit).reduce((s, o) => s + o.energyWh, 0));
    t.unit.row([strap], unitCells(strap, perUnit, u.generation));
    t.unitControl.row(
      [strap],
      [
        [2, I, -1],
        [3, I, -1],
      ],
    );
    inputRows(t, strap, tenths, wh);
    groupRows(t, strap, tenths, wh);
    for (let k = 1; k <= perUnit; k++) outletRows(u, t, strap, k, first + k);
  }
  // A unit without switching (monitored, advanced monitored) has no control tables.
  const served = Object.entries(t).filter(
    ([name]) => u.switched || (name !== "outCtl" && name !== "unitControl"),
  );
  return { scalars, tables: served.map(([, x]) => x.done()) };
}

/** Watt-hours as an Unsigned32 counter keeps them: wrapped at 2^32. */
const u32 = (wh: number): number => Math.round(wh) % 2 ** 32;

function unitCells(strap: number, outlets: number, generation: number): Cell[] {
  // A replaced unit (SimUnit.replace) reports another serial.
  const serial = (strap === 0 ? "G206N12345" : "G206N12346") + (generation > 0 ? `R${generation}` : "");
  return [
    [2, S, "Eaton ePDU MA 1P IN:C20 16A OUT:8xC13"],
    [3, S, "EMAB03"],
    [4, S, serial],
    [5, S, "03.01.0004"],
    [6, S, strap === 0 ? "ePDU rack H" : "ePDU rack H chained"],
    [7, I, 0],
    [8, S, Buffer.from("07e90b1c0c00000000", "hex")],
    [9, I, 0],
    [10, I, 1],
    [11, I, 1],
    [20, I, 1],
    [21, I, 2],
    [22, I, outlets],
    [23, I, 2],
    [24, I, 2],
    [25, I, 2],
    [30, I, 0],
    [31, I, 0],
    [32, I, 0],
  ];
}

type Tables = Record<string, TableBuilder>;

function th(id: number, low: number, high: number): Cell[] {
  return [
    [id, I, low],
    [id + 1, I, Math.round(low * 0.9)],
    [id + 2, I, high],
    [id + 3, I, Math.round(high * 1.1)],
  ];
}

function need(t: Tables, name: string): TableBuilder {
  const table = t[name];
  if (table === undefined) throw new Error(`no table ${name}`);
  return table;
}

function inputRows(t: Tables, strap: number, tenths: number, wh: number): void {
  need(t, "input").row(
    [strap, 1],
    [
      [2, I, 1],
      [3, I, 500],
      [4, I, 0],
      [5, I, 1],
      [6, I, 1],
      [7, I, 1],
      [8, I, 102],
      [9, G, 0],
      [10, S, "Feed A"],
    ],
  );
  need(t, "inVolt").row([strap, 1, 1], [[2, I, 1], [3, I, 230100], [4, I, 0], ...th(5, 200000, 250000)]);
  need(t, "inCurr").row(
    [strap, 1, 1],
    [
      [2, I, 1],
      [3, I, 16000],
      [4, I, tenths * 100],
      [5, I, tenths > 120 ? 3 : 0],
      ...th(6, 0, 12800),
      [10, I, 1414],
      [11, I, Math.round(tenths / 1.6)],
      [12, S, "L1"],
    ],
  );
  need(t, "inPower").row(
    [strap, 1, 1],
    [
      [2, I, 4],
      [3, I, tenths * 25],
      [4, I, tenths * 23],
      [5, G, wh + 120_000],
      [6, C, RESET_TIME],
      [7, I, 920],
      [8, I, tenths * 9],
    ],
  );
  need(t, "inTotal").row(
    [strap, 1],
    [
      [3, I, tenths * 25],
      [4, I, tenths * 23],
      [5, G, wh + 120_000],
      [6, C, RESET_TIME],
      [7, I, 920],
      [8, I, tenths * 9],
      [9, I, 3680],
    ],
  );
}

/** Group 1 is the breaker of every outlet, group 2 the outlet section; the section has no breaker status. */
function groupRows(t: Tables, strap: number, tenths: number, wh: number): void {
  for (const g of [1, 2]) {
    need(t, "group").row(
      [strap, g],
      [
        [2, S, g === 1 ? "B1" : "S1"],
        [3, S, g === 1 ? "Breaker 1" : "Section 1"],
        [4, I, g === 1 ? 1 : 4],
        [5, I, g === 1 ? 1 : 0],
        [6, I, 1],
        [7, G, 0],
        [8, S, g === 1 ? "B1" : "S1"],
        [9, I, 1],
      ],
    );
    need(t, "grVolt").row([strap, g], [[2, I, 1], [3, I, 230100], [4, I, 0], ...th(5, 200000, 250000)]);
    need(t, "grCurr").row(
      [strap, g],
      [
        [2, I, g === 1 ? 16000 : -1],
        [3, I, tenths * 100],
        [4, I, tenths > 120 ? 3 : 0],
        ...th(5, 0, 12800),
        [9, I, 1414],
        [10, I, g === 1 ? Math.round(tenths / 1.6) : -1],
      ],
    );
    need(t, "grPower").row(
      [strap, g],
      [
        [2, I, tenths * 25],
        [3, I, tenths * 23],
        [4, G, wh + 110_000],
        [5, C, RESET_TIME],
        [6, I, 920],
        [7, I, tenths * 9],
      ],
    );
  }
}

/** Outlet k (1-based) of unit `strap`, the unit's outlet `outlet`. */
function outletRows(u: FamilyView, t: Tables, strap: number, k: number, outlet: number): void {
  const o = u.outlets[outlet - 1];
  if (o === undefined) return;
  const c = u.tenths(outlet - 1);
  const ix = [strap, k];
  need(t, "outlet").row(
    ix,
    [
      [2, S, `A${k}`],
      [3, S, u.name(outlet, o.name), "name"],
      [4, I, 2],
      [5, I, 1],
      [6, S, `A${k}`],
      [7, I, 1],
    ],
    outlet,
  );
  need(t, "outVolt").row(ix, [[2, I, 230100], [3, I, 0], ...th(4, -1, -1)], outlet);
  need(t, "outCurr").row(
    ix,
    [
      [2, I, 10000],
      [3, I, c * 100],
      [4, I, c > 25 ? 3 : 0],
      ...th(5, 0, 8000),
      [9, I, c === 0 ? -1 : 1414],
      [10, I, c * 10],
    ],
    outlet,
  );
  need(t, "outPower").row(
    ix,
    [
      [2, I, c * 25],
      [3, I, c * 23],
      [4, G, u32(o.energyWh), "reset"],
      [5, C, RESET_TIME],
      [6, I, c === 0 ? -1 : 920],
      [7, I, c * 9],
    ],
    outlet,
  );
  need(t, "outCtl").row(
    ix,
    [
      [2, I, o.on ? 1 : 0],
      [3, I, -1, "control"],
      [4, I, -1, "control"],
      [5, I, -1, "control"],
      [6, I, 2, "plain"],
      [7, I, 0, "plain"],
      [8, I, 10, "plain"],
      [9, I, 1, "plain"],
      [10, I, 120, "plain"],
    ],
    outlet,
  );
}
