/**
 * APC rack PDUs of the AP78xx (metered) and AP79xx (switched) generation, PowerNet-MIB `rPDU` (1.3.6.1.4.1.318.1.1.12):
 * switched outlets without per-outlet metering (rPDUOutletStatusLoad answers only on outlet-monitored
 * models), and the current of each phase and bank with its load state in rPDULoadStatusTable (its
 * rows are the phases first, then the banks; a phase row has rPDULoadStatusBankNumber 0).
 *
 * Scales from the MIB: currents in tenths of amps (Gauge), rPDUIdentDevicePowerWatts in watts,
 * rPDUIdentDeviceRating in amps.
 */
import type { AlarmState, SnmpProfile } from "../profile.js";
import { states } from "./alarms.js";

const RPDU = "1.3.6.1.4.1.318.1.1.12";

/** rPDULoadStatusLoadState: phaseLoadNormal(1), phaseLoadLow(2), phaseLoadNearOverload(3), phaseLoadOverload(4). */
const LOAD_STATES: Readonly<Record<number, AlarmState>> = {
  1: states.normal("phaseLoadNormal"),
  2: states.warning("phaseLoadLow"),
  3: states.warning("phaseLoadNearOverload"),
  4: states.alarm("phaseLoadOverload"),
};

const load = "rPDULoadStatusEntry";

export const APC_RPDU: SnmpProfile = {
  id: "apc-rpdu",
  family: "APC rPDU (AP78xx/AP79xx)",
  manufacturer: "APC",
  mibs: ["PowerNet-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.318."],
  // A switched unit answers the outlet status table; a metered one (AP78xx) only the load table.
  probe: ["rPDUOutletStatusEntry", "rPDULoadStatusEntry"],
  scalars: {
    [`${RPDU}.1.1.0`]: { name: "rPDUIdentName", type: "OctetString" },
    [`${RPDU}.1.2.0`]: { name: "rPDUIdentHardwareRev", type: "OctetString" },
    [`${RPDU}.1.3.0`]: { name: "rPDUIdentFirmwareRev", type: "OctetString" },
    [`${RPDU}.1.5.0`]: { name: "rPDUIdentModelNumber", type: "OctetString" },
    [`${RPDU}.1.6.0`]: { name: "rPDUIdentSerialNumber", type: "OctetString" },
    [`${RPDU}.1.7.0`]: { name: "rPDUIdentDeviceRating", type: "Integer" },
    [`${RPDU}.1.16.0`]: { name: "rPDUIdentDevicePowerWatts", type: "Integer" },
  },
  tables: [
    {
      name: "rPDULoadStatusEntry", // rPDULoadStatusTable
      oid: `${RPDU}.2.3.1.1`,
      index: ["rPDULoadStatusIndex"],
      number: { index: 0 },
      columns: {
        Load: { id: 2, type: "Gauge" }, // rPDULoadStatusLoad, tenths of amps
        LoadState: { id: 3, type: "Integer" }, // rPDULoadStatusLoadState
        PhaseNumber: { id: 4, type: "Integer" }, // rPDULoadStatusPhaseNumber
        BankNumber: { id: 5, type: "Integer" }, // rPDULoadStatusBankNumber (0: a phase row)
      },
    },
    {
      name: "rPDUOutletControlEntry", // rPDUOutletControlTable
      oid: `${RPDU}.3.3.1.1`,
      index: ["rPDUOutletControlIndex"],
      number: { index: 0 },
      columns: {
        Command: { id: 4, type: "Integer", writable: true }, // rPDUOutletControlOutletCommand
      },
    },
    {
      name: "rPDUOutletConfigEntry", // rPDUOutletConfigTable
      oid: `${RPDU}.3.4.1.1`,
      index: ["rPDUOutletConfigIndex"],
      number: { index: 0 },
      columns: {
        OutletName: { id: 2, type: "OctetString", writable: true }, // rPDUOutletConfigOutletName
        PowerOnTime: { id: 4, type: "Integer", writable: true }, // rPDUOutletConfigPowerOnTime, s
        PowerOffTime: { id: 5, type: "Integer", writable: true }, // rPDUOutletConfigPowerOffTime, s
        RebootDuration: { id: 6, type: "Integer", writable: true }, // rPDUOutletConfigRebootDuration, s
      },
    },
    {
      name: "rPDUOutletStatusEntry", // rPDUOutletStatusTable
      oid: `${RPDU}.3.5.1.1`,
      index: ["rPDUOutletStatusIndex"],
      number: { index: 0 },
      columns: {
        OutletName: { id: 2, type: "OctetString" }, // rPDUOutletStatusOutletName
        OutletState: { id: 4, type: "Integer" }, // rPDUOutletStatusOutletState: outletStatusOn(1), outletStatusOff(2)
        Load: { id: 7, type: "Gauge" }, // rPDUOutletStatusLoad, tenths of amps (outlet-monitored models)
      },
    },
  ],
  identity: {
    serial: { scalar: `${RPDU}.1.6.0` },
    model: { scalar: `${RPDU}.1.5.0` },
    name: { scalar: `${RPDU}.1.1.0` },
    firmware: { scalar: `${RPDU}.1.3.0` },
    hardware: { scalar: `${RPDU}.1.2.0` },
  },
  outlets: {
    table: "rPDUOutletStatusEntry",
    // A metered unit (AP78xx) has no outlet status table: its identity scalars are the unit.
    withoutOutlets: { units: { scalar: `${RPDU}.1.5.0` } },
    label: { table: "rPDUOutletStatusEntry", column: "OutletName" },
    state: { table: "rPDUOutletStatusEntry", column: "OutletState", values: { 1: "on", 2: "off" } },
    measurements: [
      { table: "rPDUOutletStatusEntry", column: "Load", type: "current", units: "A", scale: 0.1 },
    ],
    delays: {
      on: { table: "rPDUOutletConfigEntry", column: "PowerOnTime" },
      off: { table: "rPDUOutletConfigEntry", column: "PowerOffTime" },
      reboot: { table: "rPDUOutletConfigEntry", column: "RebootDuration" },
    },
  },
  entities: [
    {
      prefix: "total",
      fallbackName: "Total",
      measurements: [{ scalar: `${RPDU}.1.16.0`, type: "realPower", units: "W", scale: 1 }],
      rating: { scalar: `${RPDU}.1.7.0`, scale: 1 },
    },
    {
      prefix: "phase",
      table: load,
      number: { column: "PhaseNumber" },
      where: { table: load, column: "BankNumber", values: [0] },
      fallbackName: "Phase",
      measurements: [{ table: load, column: "Load", type: "current", units: "A", scale: 0.1 }],
      alarm: { table: load, column: "LoadState", states: LOAD_STATES },
    },
    {
      prefix: "bank",
      table: load,
      number: { column: "BankNumber" },
      where: { table: load, column: "BankNumber", values: [0], not: true },
      fallbackName: "Bank",
      measurements: [{ table: load, column: "Load", type: "current", units: "A", scale: 0.1 }],
      alarm: { table: load, column: "LoadState", states: LOAD_STATES },
    },
  ],
  control: {
    table: "rPDUOutletControlEntry",
    column: "Command",
    on: 1, // immediateOn
    off: 2, // immediateOff
    reboot: 3, // immediateReboot
  },
  outletLabel: { table: "rPDUOutletConfigEntry", column: "OutletName", maxLength: 255 },
  resetStatsRefusal: "PowerNet-MIB rPDU has no energy counters to reset",
};
