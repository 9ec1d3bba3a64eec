/**
 * What a recorded SNMP unit reports, worked out by the test from the walk (./snmp-walk.ts) with
 * each MIB's own scaling and "not there" rules, written again here from the MIB texts and never
 * through the bridge's parser or profiles: the devices, their outlets (label, state) and every
 * reading a unit reports, nothing it marks as absent. One function per family; a new family adds
 * its own and its name in {@link EXPECT}.
 */
import type { Walk } from "./snmp-walk.js";

export interface ExpectedReading {
  /** The outlet's 0-based index, or null for an entity. */
  readonly outlet: number | null;
  /** The entity key (`phase0`, `inlet0`), or null for an outlet. */
  readonly entity: string | null;
  readonly type: string;
  readonly units: string;
  readonly value: number;
}

export interface ExpectedOutlet {
  readonly index: number;
  /** What the outlet's `label` topic carries (its user name, else its fixed name, else `Outlet n`). */
  readonly label: string;
  /** `varies`: the recording varies the state (snmpsim's numeric variation): on or off. */
  readonly state: "on" | "off" | "unknown" | "varies";
}

export interface ExpectedDevice {
  readonly id: string;
  readonly model: string;
  readonly outlets: readonly ExpectedOutlet[];
  readonly readings: readonly ExpectedReading[];
  /** Whether the unit answers its family's outlet control table. */
  readonly canSwitch: boolean;
}

/** A family's reading of a walk; `instanceId` is the device id of a unit without serial or MAC. */
export type Expect = (walk: Walk, instanceId: string) => ExpectedDevice[];

const round = (x: number): number => Math.round(x * 1e6) / 1e6;

/** A device id as the bridge takes it: the serial, else the MAC, else the instance id. */
function deviceId(serial: string | undefined, mac: string, instanceId: string): string {
  const safe = (s: string | undefined) => (s !== undefined && /^[A-Za-z0-9._:-]{1,64}$/.test(s) ? s : null);
  return safe(serial?.trim()) ?? safe(mac) ?? instanceId;
}

function macOf(walk: Walk, oid: string): string {
  const b = walk.get(oid)?.bytes;
  return b?.length === 6 ? [...b].map((x) => x.toString(16).padStart(2, "0").toUpperCase()).join(":") : "";
}

// ---------------------------------------------------------------------------------------------
// PowerNet-MIB rPDU2 (1.3.6.1.4.1.318.1.1.26): tables carry Module (column 2) and Number columns.

const R2 = "1.3.6.1.4.1.318.1.1.26";

/** Readings of one rPDU2 status row: [column, type, units, scale, "-1 is not supported"]. */
type Col = readonly [number, string, string, number, boolean];

function rpdu2Rows(walk: Walk, entry: string, module: number, numberColumn: number | null) {
  const rows: { index: string; number: number }[] = [];
  for (const [index, v] of walk.column(`${entry}.2`)) {
    if (v.number !== module) continue;
    const i = index.join(".");
    const number = numberColumn === null ? 1 : walk.int(`${entry}.${numberColumn}.${i}`);
    if (number !== undefined) rows.push({ index: i, number });
  }
  return rows;
}

function rpdu2Readings(
  walk: Walk,
  entry: string,
  index: string,
  cols: readonly Col[],
  at: Partial<ExpectedReading>,
) {
  const out: ExpectedReading[] = [];
  for (const [column, type, units, scale, minusOne] of cols) {
    const raw = walk.int(`${entry}.${column}.${index}`);
    if (raw === undefined || (minusOne && raw === -1)) continue;
    out.push({ outlet: null, entity: null, ...at, type, units, value: round(raw * scale) });
  }
  return out;
}

/** rPDU2SensorTempHumidityStatusTable: probe type, comm status and each reading's status say what is there. */
function rpdu2Sensors(walk: Walk, module: number): ExpectedReading[] {
  const entry = `${R2}.10.2.2.1`;
  const out: ExpectedReading[] = [];
  for (const { index, number } of rpdu2Rows(walk, entry, module, 4)) {
    const cell = (c: number) => walk.int(`${entry}.${c}.${index}`);
    const type = cell(5); // temperatureOnly(1), temperatureHumidity(2), commsLost(3), notInstalled(4)
    const comm = cell(6); // notInstalled(1), commsOK(2), commsLost(3)
    if (type === 4 || comm === 1) continue;
    const entity = `sensor${number - 1}`;
    const temp = cell(8);
    if (temp !== undefined && cell(9) !== 1 && comm !== 3 && type !== 3)
      out.push({ outlet: null, entity, type: "temperature", units: "°C", value: round(temp * 0.1) });
    const humidity = cell(10);
    if (humidity !== undefined && cell(11) !== 1 && type !== 1 && type !== 3 && comm !== 3)
      out.push({ outlet: null, entity, type: "humidity", units: "%", value: humidity });
  }
  return out;
}

export const expectApcRpdu2: Expect = (walk, instanceId) => {
  const devices: ExpectedDevice[] = [];
  for (const [index, moduleValue] of walk.column(`${R2}.2.1.2`)) {
    const module = moduleValue.number;
    const i = index.join(".");
    const readings: ExpectedReading[] = [];
    const labels = new Map<number, string>();
    const states = new Map<number, ExpectedOutlet["state"]>();
    for (const row of rpdu2Rows(walk, `${R2}.9.2.3.1`, module, 4)) {
      labels.set(row.number, walk.text(`${R2}.9.2.3.1.3.${row.index}`) ?? "");
      const state = walk.get(`${R2}.9.2.3.1.5.${row.index}`);
      states.set(row.number, state?.varies === true ? "varies" : state?.number === 2 ? "on" : "off");
    }
    const metered: Col[] = [
      [6, "current", "A", 0.1, false],
      [7, "realPower", "W", 1, false],
      [11, "energy", "kWh", 0.1, false],
    ];
    for (const row of rpdu2Rows(walk, `${R2}.9.4.3.1`, module, 4)) {
      if (!labels.has(row.number)) labels.set(row.number, walk.text(`${R2}.9.4.3.1.3.${row.index}`) ?? "");
      readings.push(...rpdu2Readings(walk, `${R2}.9.4.3.1`, row.index, metered, { outlet: row.number - 1 }));
    }
    const device: Col[] = [
      [5, "realPower", "W", 10, true],
      [9, "energy", "kWh", 0.1, true],
      [16, "apparentPower", "VA", 10, true],
      [17, "powerFactor", "%", 1, true],
    ];
    for (const row of rpdu2Rows(walk, `${R2}.4.3.1`, module, null))
      readings.push(...rpdu2Readings(walk, `${R2}.4.3.1`, row.index, device, { entity: "total0" }));
    const phase: Col[] = [
      [5, "current", "A", 0.1, false],
      [6, "voltage", "V", 1, true],
      [7, "realPower", "W", 10, true],
      [8, "apparentPower", "VA", 10, true],
      [9, "powerFactor", "%", 1, true],
    ];
    for (const row of rpdu2Rows(walk, `${R2}.6.3.1`, module, 3))
      readings.push(
        ...rpdu2Readings(walk, `${R2}.6.3.1`, row.index, phase, { entity: `phase${row.number - 1}` }),
      );
    for (const row of rpdu2Rows(walk, `${R2}.8.3.1`, module, 3)) {
      const bank: Col[] = [[5, "current", "A", 0.1, false]];
      readings.push(
        ...rpdu2Readings(walk, `${R2}.8.3.1`, row.index, bank, { entity: `bank${row.number - 1}` }),
      );
    }
    readings.push(...rpdu2Sensors(walk, module));
    const outlets = [...labels].map(([number, label]) => ({
      index: number - 1,
      label: label !== "" ? label : `Outlet ${number}`,
      state: states.get(number) ?? "unknown",
    }));
    devices.push({
      id: deviceId(walk.text(`${R2}.2.1.9.${i}`), "", instanceId),
      model: walk.text(`${R2}.2.1.8.${i}`) ?? "",
      outlets: outlets.sort((a, b) => a.index - b.index),
      readings,
      canSwitch: rpdu2Rows(walk, `${R2}.9.2.4.1`, module, 4).length > 0,
    });
  }
  return devices;
};

// ---------------------------------------------------------------------------------------------
// PowerNet-MIB rPDU (1.3.6.1.4.1.318.1.1.12): one unit, identity scalars.

const R1 = "1.3.6.1.4.1.318.1.1.12";

export const expectApcRpdu: Expect = (walk, instanceId) => {
  const readings: ExpectedReading[] = [];
  const outlets: ExpectedOutlet[] = [];
  // rPDUOutletStatusTable: name (2), state outletStatusOn(1)/outletStatusOff(2) (4), load in tenths of amps (7).
  for (const [[n = 0], v] of walk.column(`${R1}.3.5.1.1.2`)) {
    const state = walk.int(`${R1}.3.5.1.1.4.${n}`);
    const label = v.bytes.toString("utf8").trim();
    outlets.push({
      index: n - 1,
      label: label !== "" ? label : `Outlet ${n}`,
      state: state === 1 ? "on" : state === 2 ? "off" : "unknown",
    });
    const load = walk.int(`${R1}.3.5.1.1.7.${n}`);
    if (load !== undefined)
      readings.push({ outlet: n - 1, entity: null, type: "current", units: "A", value: round(load * 0.1) });
  }
  const watts = walk.int(`${R1}.1.16.0`); // rPDUIdentDevicePowerWatts
  if (watts !== undefined)
    readings.push({ outlet: null, entity: "total0", type: "realPower", units: "W", value: watts });
  // rPDULoadStatusTable: load in tenths of amps (2), phase (4), bank (5; 0 on a phase row).
  for (const [[n = 0], v] of walk.column(`${R1}.2.3.1.1.2`)) {
    const phase = walk.int(`${R1}.2.3.1.1.4.${n}`) ?? 0;
    const bank = walk.int(`${R1}.2.3.1.1.5.${n}`) ?? 0;
    const entity = bank === 0 ? `phase${phase - 1}` : `bank${bank - 1}`;
    readings.push({ outlet: null, entity, type: "current", units: "A", value: round(v.number * 0.1) });
  }
  return [
    {
      id: deviceId(walk.text(`${R1}.1.6.0`), "", instanceId),
      model: walk.text(`${R1}.1.5.0`) ?? "",
      outlets: outlets.sort((a, b) => a.index - b.index),
      readings,
      canSwitch: walk.column(`${R1}.3.3.1.1.4`).length > 0,
    },
  ];
};

// ---------------------------------------------------------------------------------------------
// PDU2-MIB (1.3.6.1.4.1.13742.6): sensor rows (pduId, id, sensorType); value ÷ 10^decimalDigits.

const P2 = "1.3.6.1.4.1.13742.6";

/** SensorTypeEnumeration → the bridge's type, units and factor from the MIB's base unit. */
const RARITAN_SENSORS: Readonly<Record<number, readonly [string, string, number]>> = {
  1: ["current", "A", 1],
  4: ["voltage", "V", 1],
  5: ["realPower", "W", 1],
  6: ["apparentPower", "VA", 1],
  7: ["powerFactor", "%", 100], // a ratio
  8: ["energy", "kWh", 0.001], // wattHour
};

/** A sensor is not there: IsAvailable false(2) or state unavailable(-1). */
function raritanAbsent(walk: Walk, measurements: string, index: string): boolean {
  return walk.int(`${measurements}.2.${index}`) === 2 || walk.int(`${measurements}.3.${index}`) === -1;
}

function raritanReadings(
  walk: Walk,
  measurements: string,
  config: string,
  types: readonly number[],
  at: (id: number) => Partial<ExpectedReading>,
): ExpectedReading[] {
  const out: ExpectedReading[] = [];
  for (const [[pdu = 0, id = 0, sensorType = 0], v] of walk.column(`${measurements}.4`)) {
    const kind = RARITAN_SENSORS[sensorType];
    if (kind === undefined || !types.includes(sensorType)) continue;
    const index = `${pdu}.${id}.${sensorType}`;
    const digits = walk.int(`${config}.7.${index}`);
    if (raritanAbsent(walk, measurements, index) || digits === undefined) continue;
    const [type, units, scale] = kind;
    out.push({
      outlet: null,
      entity: null,
      ...at(id),
      type,
      units,
      value: round((v.number / 10 ** digits) * scale),
    });
  }
  return out;
}

function raritanState(walk: Walk, pdu: number, outlet: number): ExpectedOutlet["state"] {
  const switching = walk.int(`${P2}.4.1.2.1.3.${pdu}.${outlet}`); // on(7), off(8)
  if (switching === 7 || switching === 8) return switching === 7 ? "on" : "off";
  const onOff = `${pdu}.${outlet}.14`; // the outlet's onOff sensor
  const state = walk.int(`${P2}.5.4.3.1.3.${onOff}`);
  if (raritanAbsent(walk, `${P2}.5.4.3.1`, onOff)) return "unknown";
  return state === 7 ? "on" : state === 8 ? "off" : "unknown";
}

export const expectRaritanPx2: Expect = (walk, instanceId) => {
  const pdu = 1;
  const outlets: ExpectedOutlet[] = [];
  // outletConfigurationTable: outletLabel (2, the printed one), outletName (3, the user's).
  for (const [[p = 0, n = 0], v] of walk.column(`${P2}.3.5.3.1.2`)) {
    if (p !== pdu) continue;
    const name = walk.text(`${P2}.3.5.3.1.3.${p}.${n}`) ?? "";
    const printed = v.bytes.toString("utf8").trim();
    outlets.push({
      index: n - 1,
      label: name !== "" ? name : printed !== "" ? printed : `Outlet ${n}`,
      state: raritanState(walk, p, n),
    });
  }
  const all = [1, 4, 5, 6, 7, 8];
  const readings = [
    ...raritanReadings(walk, `${P2}.5.4.3.1`, `${P2}.3.5.4.1`, all, (id) => ({ outlet: id - 1 })),
    ...raritanReadings(walk, `${P2}.5.2.3.1`, `${P2}.3.3.4.1`, all, (id) => ({ entity: `inlet${id - 1}` })),
    ...raritanReadings(walk, `${P2}.5.3.3.1`, `${P2}.3.4.4.1`, [1], (id) => ({ entity: `breaker${id - 1}` })),
  ];
  return [
    {
      id: deviceId(walk.text(`${P2}.3.2.1.1.4.${pdu}`), macOf(walk, `${P2}.3.2.2.1.11.${pdu}`), instanceId),
      model: walk.text(`${P2}.3.2.1.1.3.${pdu}`) ?? "",
      outlets: outlets.sort((a, b) => a.index - b.index),
      readings,
      canSwitch: walk.column(`${P2}.4.1.2.1.2`).length > 0,
    },
  ];
};

/** The expectation of each profile, by `Snmp.Profile`. */
export const EXPECT: Readonly<Record<string, Expect>> = {
  "apc-rpdu2": expectApcRpdu2,
  "apc-rpdu": expectApcRpdu,
  "raritan-px2": expectRaritanPx2,
};
