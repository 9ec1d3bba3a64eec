/**
 * A simulated CyberPower rack PDU (CPS-MIB): the `ePDU` tables every CyberPower firmware serves and,
 * for `cyberpower-epdu2`, the `ePDU2` tables of the daisy-chain generation beside them, in the shape
 * of a real PDU44005's walk (the same tables, columns and types; its INTEGER where the MIB says
 * Gauge), one unit, one phase and one bank. Unlike that unit it meters every outlet
 * (`ePDUOutletDevMonitoredOutlets` and `ePDU2DeviceInfoMeteredOutlets` count them), so the per-outlet
 * readings are there to read.
 */
import { TableBuilder, type FamilyView, type SimContent, type SimScalar } from "./tables.js";

const I = "Integer";
const S = "OctetString";
const G = "Gauge";
const E = "1.3.6.1.4.1.3808.1.1.3";
const E2 = "1.3.6.1.4.1.3808.1.1.6";
const NAME = "rack-cps-f";
const MODEL = "PDU81005";
const SERIAL = "GD3N7E2000123";
const STAMP = "05/24/2023 10:08:33";

/** The outlet-switching commands of ePDUOutletControlOutletCommand and ePDU2OutletSwitchedControlCommand. */
export const CPS_COMMANDS: Readonly<Record<number, "on" | "off" | "reboot">> = {
  1: "on",
  2: "off",
  3: "reboot",
};

export function cyberpowerDefaultName(n: number): string {
  return n === 4 ? "nas-02" : `Outlet${n}`;
}

/** The whole unit: `ePDU2`: ePDU and ePDU2, else ePDU only. */
export function cyberpowerContent(u: FamilyView, epdu2: boolean): SimContent {
  const scalars: SimScalar[] = [
    ...u.system(
      "CPS Power Distributed Unit",
      epdu2 ? "1.3.6.1.4.1.3808.1.1.6" : "1.3.6.1.4.1.3808.1.1.3",
      NAME,
    ),
    ...epduScalars(u),
  ];
  const tables = epduTables(u);
  if (epdu2) {
    scalars.push(
      { oid: `${E2}.1.0`, type: I, value: 1 }, // ePDU2Role: standalone
      { oid: `${E2}.2.1.0`, type: I, value: 1 },
      { oid: `${E2}.3.1.0`, type: I, value: 1 },
      { oid: `${E2}.4.1.0`, type: I, value: 1 },
      { oid: `${E2}.5.1.0`, type: I, value: 1 },
      { oid: `${E2}.6.1.1.0`, type: I, value: u.switched ? u.outlets.length : 0 },
      { oid: `${E2}.6.2.1.0`, type: I, value: u.outlets.length },
    );
    tables.push(...epdu2Tables(u));
  }
  return { scalars, tables: tables.map((t) => t.done()) };
}

function epduScalars(u: FamilyView): SimScalar[] {
  const n = u.outlets.length;
  const int = (oid: string, value: number): SimScalar => ({ oid, type: I, value });
  return [
    { oid: `${E}.1.1.0`, type: S, value: NAME },
    { oid: `${E}.1.2.0`, type: S, value: "1.1" },
    { oid: `${E}.1.3.0`, type: S, value: "1.3.2" },
    { oid: `${E}.1.4.0`, type: S, value: "232524" },
    { oid: `${E}.1.5.0`, type: S, value: MODEL },
    { oid: `${E}.1.6.0`, type: S, value: SERIAL },
    int(`${E}.1.7.0`, 16),
    int(`${E}.1.8.0`, n),
    int(`${E}.1.9.0`, 1),
    int(`${E}.1.10.0`, 0),
    int(`${E}.1.11.0`, 0),
    int(`${E}.2.1.1.0`, 0),
    int(`${E}.2.1.2.0`, 1),
    int(`${E}.2.1.3.0`, 16),
    int(`${E}.2.1.4.0`, 1),
    int(`${E}.2.1.7.0`, n),
    int(`${E}.3.1.1.0`, 1), // ePDUOutletDevCommand: noCommandAll
    int(`${E}.3.1.2.0`, 0),
    int(`${E}.3.1.3.0`, u.switched ? n : 0),
    int(`${E}.3.1.4.0`, n),
    int(`${E}.3.1.5.0`, n), // ePDUOutletDevMonitoredOutlets
    int(`${E}.3.1.6.0`, 1),
    int(`${E}.3.4.2.0`, n),
    int(`${E}.4.1.1.0`, 1),
    int(`${E}.4.1.2.0`, 1),
    int(`${E}.4.1.3.0`, 1),
    int(`${E}.5.1.0`, 1),
    int(`${E}.5.3.0`, 1),
    int(`${E}.5.5.0`, n),
    int(`${E}.5.7.0`, 2301),
    int(`${E}.5.8.0`, 500),
  ];
}

function epduTables(u: FamilyView): TableBuilder[] {
  const tot = u.totalTenths();
  const watts = tot * 23;
  const energy = Math.round(u.outlets.reduce((s, o) => s + o.energyWh, 0) / 100);
  const bankSize = new TableBuilder(`${E}.2.1.6.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, 16],
    ],
  );
  const outletMax = new TableBuilder(`${E}.2.1.8.1`, 1);
  const phaseConfig = new TableBuilder(`${E}.2.2.1.1`, 1).row([1], thresholds());
  const load = new TableBuilder(`${E}.2.3.1.1`, 1)
    .row(
      [1],
      [
        [1, I, 1],
        [2, G, tot],
        [3, I, tot > 120 ? 3 : 1],
        [4, I, 1],
        [5, I, 0],
        [6, I, 2301],
        [7, I, watts],
        [8, I, tot * 25],
        [9, I, 92],
        [10, I, energy],
        [11, S, STAMP],
      ],
    )
    // The bank row has no apparent power, power factor nor energy: holes, as on the real unit.
    .row(
      [2],
      [
        [1, I, 2],
        [2, G, tot],
        [3, I, tot > 120 ? 3 : 1],
        [4, I, 1],
        [5, I, 1],
        [6, I, 2301],
        [7, I, watts],
      ],
    );
  const bankConfig = new TableBuilder(`${E}.2.4.1.1`, 1).row([1], thresholds());
  const { control, config, monitored, status } = epduOutlets(u, outletMax);
  const outletBank = new TableBuilder(`${E}.3.6.1.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
    ],
  );
  return [
    bankSize,
    outletMax,
    phaseConfig,
    load,
    bankConfig,
    // A metered unit has no controlled outlet (ePDUOutletDevNumCntrlOutlets 0): no rows there.
    ...(u.switched ? [control, config, monitored, status] : [monitored]),
    outletBank,
    ...epduStatus(u, tot),
  ];
}

/** ePDUStatusBankTable, ePDUStatusPhaseTable and ePDUStatusOutletTable (a row per monitored outlet). */
function epduStatus(u: FamilyView, tot: number): TableBuilder[] {
  const bankStatus = new TableBuilder(`${E}.5.2.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, tot > 120 ? 3 : 1],
    ],
  );
  const phaseStatus = new TableBuilder(`${E}.5.4.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, tot > 120 ? 3 : 1],
    ],
  );
  const outletStatus = new TableBuilder(`${E}.5.6.1`, 1);
  u.outlets.forEach((_o, i) => {
    const c = u.tenths(i);
    outletStatus.row(
      [i + 1],
      [
        [1, I, i + 1],
        [2, I, i + 1],
        [3, I, c > 25 ? 3 : 1],
      ],
    );
  });
  return [bankStatus, phaseStatus, outletStatus];
}

/** The index, thresholds and alarm of a phase or bank configuration row. */
function thresholds(): [number, "Integer", number][] {
  return [
    [1, I, 1],
    [2, I, 0],
    [3, I, 12],
    [4, I, 16],
    [5, I, 1],
  ];
}

/** ePDUOutletControlTable, ePDUOutletConfigTable, …ConfigMonitoredTable, ePDUOutletStatusTable. */
function epduOutlets(u: FamilyView, outletMax: TableBuilder) {
  const control = new TableBuilder(`${E}.3.3.1.1`, 1);
  const config = new TableBuilder(`${E}.3.4.1.1`, 1);
  const monitored = new TableBuilder(`${E}.3.4.3.1`, 1);
  const status = new TableBuilder(`${E}.3.5.1.1`, 1);
  u.outlets.forEach((o, i) => {
    const k = i + 1;
    const name = u.name(k, o.name);
    const c = u.tenths(i);
    outletMax.row(
      [k],
      [
        [1, I, k],
        [2, I, k],
        [3, I, 120],
      ],
    );
    control.row(
      [k],
      [
        [1, I, k],
        [2, S, name],
        [3, I, 1],
        [4, I, o.on ? 1 : 2, "control"],
        [5, I, 1],
      ],
      k,
    );
    config.row(
      [k],
      [
        [1, I, k],
        [2, S, name, "name"],
        [3, I, 1],
        [4, I, 3, "plain"],
        [5, I, 3, "plain"],
        [6, I, 5, "plain"],
        [7, I, 1],
      ],
      k,
    );
    monitored.row(
      [k],
      [
        [1, I, k],
        [2, S, name],
        [3, I, k],
        [4, I, 0],
        [5, I, 2000],
        [6, I, 2500],
        [7, I, 1],
        [8, I, 1],
      ],
      k,
    );
    status.row(
      [k],
      [
        [1, I, k],
        [2, S, name],
        [3, I, 1],
        [4, I, o.on ? 1 : 2],
        [5, I, 2],
        [6, I, 1],
        [7, G, c],
        [8, G, c * 23],
        [9, I, c > 25 ? 3 : 1],
        [10, I, c * 25],
        [11, S, STAMP],
        [12, S, STAMP],
        [13, I, Math.round(o.energyWh / 100)],
        [14, S, STAMP],
      ],
      k,
    );
  });
  return { control, config, monitored, status };
}

function epdu2Tables(u: FamilyView): TableBuilder[] {
  const n = u.outlets.length;
  const tot = u.totalTenths();
  const energy = Math.round(u.outlets.reduce((s, o) => s + o.energyWh, 0) / 100);
  const device = new TableBuilder(`${E2}.3.4.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, S, NAME],
      [4, I, tot > 120 ? 3 : 1],
      [5, G, tot],
      [6, G, tot + 4],
      [7, S, STAMP],
      [8, S, STAMP],
      [9, G, energy],
      [10, S, STAMP],
      [11, I, 2],
      [12, I, 1],
      [13, I, 1],
      [14, I, 1],
      [15, G, tot * 25],
      [16, G, 92],
      [17, I, 1],
      [18, G, tot * 23],
    ],
  );
  const deviceControl = new TableBuilder(`${E2}.3.5.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, S, NAME],
      [4, I, 1],
    ],
  );
  return [...epdu2Unit(n, u.switched), device, deviceControl, ...epdu2Loads(tot), ...epdu2Outlets(u)];
}

/** ePDU2IdentTable, ePDU2DeviceConfigTable and ePDU2DeviceInfoTable of the one unit. */
function epdu2Unit(n: number, switched: boolean): TableBuilder[] {
  const ident = new TableBuilder(`${E2}.2.2.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, S, NAME],
      [4, S, "Row F"],
      [5, S, "ops"],
      [6, S, "1.1"],
      [7, S, "1.3.2"],
      [8, S, "232524"],
      [9, S, MODEL],
      [10, S, SERIAL],
      [11, I, 1],
    ],
  );
  const deviceConfig = new TableBuilder(`${E2}.3.2.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, S, NAME],
      [4, S, "Row F"],
      [5, S, "ops"],
      [6, I, 5],
      [7, I, 0],
      [8, I, 0],
      [9, I, 12],
      [10, I, 16],
      [11, I, 1],
      [12, I, 1],
    ],
  );
  const info = new TableBuilder(`${E2}.3.3.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, S, NAME],
      [4, I, 16],
      [5, I, n],
      [6, I, switched ? n : 0],
      [7, I, n],
      [8, I, 1],
      [9, I, 1],
      [10, I, 16],
      [11, I, 1],
      [12, I, 1],
      [13, I, 3680],
    ],
  );
  return [ident, deviceConfig, info];
}

/** ePDU2's phase and bank tables: one phase, one bank carrying every outlet. */
function epdu2Loads(tot: number): TableBuilder[] {
  const state = tot > 120 ? 3 : 1;
  const phaseConfig = new TableBuilder(`${E2}.4.2.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, 1],
      [4, I, 1],
      [5, I, 0],
      [6, I, 12],
      [7, I, 16],
      [8, I, 1],
    ],
  );
  const phaseInfo = new TableBuilder(`${E2}.4.3.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, 1],
    ],
  );
  const phase = new TableBuilder(`${E2}.4.4.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, 1],
      [4, I, state],
      [5, G, tot],
      [6, G, 2301],
      [7, G, tot * 23],
      [8, G, tot * 25],
      [9, G, 92],
      [10, G, tot + 4],
      [11, S, STAMP],
      [12, S, STAMP],
    ],
  );
  const bankConfig = new TableBuilder(`${E2}.5.2.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, 1],
      [4, I, 1],
      [5, I, 0],
      [6, I, 12],
      [7, I, 16],
    ],
  );
  const bankInfo = new TableBuilder(`${E2}.5.3.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, 1],
    ],
  );
  const bank = new TableBuilder(`${E2}.5.4.1`, 1).row(
    [1],
    [
      [1, I, 1],
      [2, I, 1],
      [3, I, 1],
      [4, I, state],
      [5, G, tot],
    ],
  );
  return [phaseConfig, phaseInfo, phase, bankConfig, bankInfo, bank];
}

/** ePDU2's switched outlet tables (config, info, status, control) and metered status. */
function epdu2Outlets(u: FamilyView): TableBuilder[] {
  const config = new TableBuilder(`${E2}.6.1.2.1`, 1);
  const info = new TableBuilder(`${E2}.6.1.3.1`, 1);
  const status = new TableBuilder(`${E2}.6.1.4.1`, 1);
  const control = new TableBuilder(`${E2}.6.1.5.1`, 1);
  const metered = new TableBuilder(`${E2}.6.2.4.1`, 1);
  u.outlets.forEach((o, i) => {
    const k = i + 1;
    const name = u.name(k, o.name);
    const c = u.tenths(i);
    const head = [
      [1, I, k],
      [2, I, 1],
      [3, I, k],
    ] as const;
    config.row(
      [k],
      [...head, [4, S, name, "name"], [5, I, 3, "plain"], [6, I, 3, "plain"], [7, I, 5, "plain"]],
      k,
    );
    info.row([k], [...head, [4, S, name], [5, I, 1], [6, I, 1]], k);
    status.row([k], [...head, [4, S, name], [5, I, o.on ? 1 : 2], [6, I, 2]], k);
    control.row([k], [...head, [4, S, name], [5, I, o.on ? 1 : 2, "control"]], k);
    metered.row(
      [k],
      [
        ...head,
        [4, S, name],
        [5, I, c > 25 ? 3 : 1],
        [6, G, c],
        [7, G, c * 23],
        [8, G, c * 25],
        [9, S, STAMP],
        [10, S, STAMP],
        [11, G, Math.round(o.energyWh / 100)],
        [12, S, STAMP],
      ],
      k,
    );
  });
  return u.switched ? [config, info, status, control, metered] : [metered];
}
