/**
 * A simulated ServerTech Sentry3 CDU (Sentry3-MIB): two towers behind one address (A the master,
 * B its link tower), each with one input feed and half of the unit's outlets, in the shape the MIB
 * gives (every column of the system group, towerTable, infeedTable and outletTable; all INTEGER or
 * DisplayString, BITS as octets; -1 where a reading is not available).
 */
import { TableBuilder, type FamilyView, type SimContent, type SimScalar } from "./tables.js";

const I = "Integer";
const S = "OctetString";
const S3 = "1.3.6.1.4.1.1718.3";
const TOWERS = ["A", "B"] as const;

/** outletControlAction: on(1), off(2), reboot(3). */
export const SENTRY3_COMMANDS: Readonly<Record<number, "on" | "off" | "reboot">> = {
  1: "on",
  2: "off",
  3: "reboot",
};

export function sentry3DefaultName(n: number, outlets: number): string {
  const perTower = Math.max(1, Math.floor(outlets / TOWERS.length));
  const tower = TOWERS[Math.floor((n - 1) / perTower)] ?? "A";
  const k = ((n - 1) % perTower) + 1;
  return n === 5 ? "db-02" : `Tower${tower}_Outlet${k}`;
}

export function sentry3Content(u: FamilyView): SimContent {
  const perTower = Math.floor(u.outlets.length / TOWERS.length);
  const total = u.totalTenths();
  const scalars: SimScalar[] = [
    ...u.system("Sentry Switched CDU", "1.3.6.1.4.1.1718.3", "sentry3-rack-g"),
    { oid: `${S3}.1.1.0`, type: S, value: "Sentry Switched CDU Version 7.1a" },
    { oid: `${S3}.1.2.0`, type: S, value: "NAB01234" },
    { oid: `${S3}.1.3.0`, type: S, value: "Row G" },
    { oid: `${S3}.1.4.0`, type: I, value: TOWERS.length },
    { oid: `${S3}.1.5.0`, type: I, value: 0 },
    { oid: `${S3}.1.6.0`, type: I, value: total * 23 },
    { oid: `${S3}.1.7.0`, type: I, value: 0 },
    { oid: `${S3}.1.8.0`, type: I, value: -1 },
    { oid: `${S3}.1.9.0`, type: I, value: 1 },
    { oid: `${S3}.1.10.0`, type: I, value: 95 },
    { oid: `${S3}.1.11.0`, type: S, value: Buffer.from([0x00]) },
    { oid: `${S3}.1.12.0`, type: S, value: "" },
    { oid: `${S3}.1.13.0`, type: I, value: 2 },
    { oid: `${S3}.1.14.0`, type: I, value: 5 },
    { oid: `${S3}.1.15.0`, type: I, value: 12 },
  ];
  const towers = new TableBuilder(`${S3}.2.1.1`, 1);
  const infeeds = new TableBuilder(`${S3}.2.2.1`, 2);
  const outlets = new TableBuilder(`${S3}.2.3.1`, 3);
  TOWERS.forEach((id, t) => {
    const first = t * perTower;
    let tenths = 0;
    for (let i = first; i < first + perTower; i++) tenths += u.tenths(i);
    const wh = u.outlets.slice(first, first + perTower).reduce((s, o) => s + o.energyWh, 0);
    towers.row([t + 1], towerCells(id, t, tenths, wh));
    infeeds.row([t + 1, 1], infeedCells(id, perTower, tenths, wh));
    for (let k = 1; k <= perTower; k++) outletRow(u, outlets, t, k, first + k);
  });
  return { scalars, tables: [towers, infeeds, outlets].map((x) => x.done()) };
}

function towerCells(id: string, t: number, tenths: number, wh: number) {
  return [
    [2, S, id],
    [3, S, t === 0 ? "Master" : "Link"],
    [4, I, 0],
    [5, I, 1],
    [6, S, t === 0 ? "ADLH0001862" : "ADLH0001863"],
    [7, S, "CW-16V1-C20M"],
    [8, S, Buffer.from([0x80])],
    [9, I, 3680],
    [10, I, Math.round((tenths * 25 * 1000) / 3680)],
    [11, I, tenths * 23],
    [12, I, tenths * 25],
    [13, I, 92],
    [14, I, Math.round(wh / 1000) + 310],
    [15, I, 50],
  ] as const;
}

function infeedCells(id: string, outlets: number, tenths: number, wh: number) {
  return [
    [2, S, `${id}A`],
    [3, S, `Tower${id}_InfeedA`],
    [4, S, Buffer.from([0xf6, 0x80])],
    [5, I, 1],
    [6, I, tenths > 120 ? 4 : 0],
    [7, I, tenths * 10],
    [8, I, 24],
    [9, I, outlets],
    [10, I, 16],
    [11, I, 2301],
    [12, I, tenths * 23],
    [13, I, tenths * 25],
    [14, I, 92],
    [15, I, 14],
    [16, I, Math.round(wh / 100) + 3100],
    [17, I, 2],
    [18, I, 2301],
    [19, I, tenths * 10],
    [20, I, Math.round(tenths * 6.25)],
    [21, S, "L1"],
    [22, S, "L1-N"],
    [23, S, "L1-N"],
    [24, I, 3680],
    [25, I, Math.round((tenths * 25 * 1000) / 3680)],
  ] as const;
}

/** Outlet k (1-based) of tower t (0-based), the unit's outlet `outlet`. */
function outletRow(u: FamilyView, outlets: TableBuilder, t: number, k: number, outlet: number): void {
  const o = u.outlets[outlet - 1];
  if (o === undefined) return;
  const id = TOWERS[t] ?? "A";
  const c = u.tenths(outlet - 1);
  outlets.row(
    [t + 1, 1, k],
    [
      [2, S, `${id}A${k}`],
      [3, S, u.name(outlet, o.name), "name"],
      // outletCapabilities: onSense, loadSense, powerControl (a Smart tower: not), powerSense.
      [4, S, Buffer.from([u.switched ? 0xe0 : 0xc0, 0x80])],
      [5, I, o.on ? 1 : 0],
      [6, I, o.on ? (c > 25 ? 4 : 0) : 1],
      [7, I, o.on ? c * 10 : 0],
      [8, I, 0],
      [9, I, 3],
      [10, I, o.on ? 1 : 0],
      [11, I, 0, "control"],
      [12, I, 10],
      [13, I, 2301],
      [14, I, c * 23],
      [15, I, c * 25],
      [16, I, c === 0 ? -1 : 92],
      [17, I, c === 0 ? -1 : 14],
      [18, I, Math.round(o.energyWh) + 1500],
      [19, I, 1],
      [20, I, 0, "plain"],
    ],
    outlet,
  );
}
