/**
 * CyberPower rack PDUs on CPS-MIB `ePDU` (1.3.6.1.4.1.3808.1.1.3), the single-unit tables that every
 * CyberPower PDU firmware serves (units that also answer `ePDU2` are detected as
 * `cyberpower-epdu2`). One unit per agent: identity from the `ePDUIdent` scalars; phases and banks
 * from `ePDULoadStatusTable`, whose rows are the phases first, then the banks (a phase row has
 * `ePDULoadStatusBankNumber` 0).
 *
 * Scales from the MIB's DESCRIPTIONs: currents in tenths of amps, voltages in tenths of volts,
 * power in watts, apparent power in VA, power factor in hundredths, energy in tenths of kWh. The
 * outlet readings of `ePDUOutletStatusTable` (load, active power, energy) are those "for an Outlet
 * Monitored Rack PDU": on a unit whose `ePDUOutletDevMonitoredOutlets` is 0 they are absent.
 */
import type { AlarmState, SnmpProfile } from "../profile.js";
import { states } from "./alarms.js";
import { CPS_CURRENT_ALARMS } from "./cyberpower-epdu2.js";

const E = "1.3.6.1.4.1.3808.1.1.3";
const load = "ePDULoadStatusEntry";
const status = "ePDUOutletStatusEntry";
const config = "ePDUOutletConfigEntry";
const MONITORED = `${E}.3.1.5.0`;
/** The outlet readings are "for an Outlet Monitored Rack PDU": absent on a unit that monitors none. */
const UNMONITORED = [{ scalar: MONITORED, values: [0] }];

/** ePDULoadStatusLoadState: loadNormal(1), loadLow(2), loadNearOverload(3), loadOverload(4). */
const LOAD_STATES: Readonly<Record<number, AlarmState>> = {
  1: states.normal("loadNormal"),
  2: states.warning("loadLow"),
  3: states.warning("loadNearOverload"),
  4: states.alarm("loadOverload"),
};

const loadReadings = [
  { table: load, column: "Load", type: "current", units: "A", scale: 0.1 },
  { table: load, column: "Voltage", type: "voltage", units: "V", scale: 0.1 },
  { table: load, column: "ActivePower", type: "realPower", units: "W", scale: 1 },
  { table: load, column: "ApparentPower", type: "apparentPower", units: "VA", scale: 1 },
  { table: load, column: "PowerFactor", type: "powerFactor", units: "%", scale: 1 },
  { table: load, column: "Energy", type: "energy", units: "kWh", scale: 0.1 },
] as const;

export const CYBERPOWER_EPDU: SnmpProfile = {
  id: "cyberpower-epdu",
  family: "CyberPower ePDU",
  manufacturer: "CyberPower",
  mibs: ["CPS-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.3808."],
  probe: [status, load],
  scalars: {
    [`${E}.1.1.0`]: { name: "ePDUIdentName", type: "OctetString" },
    [`${E}.1.2.0`]: { name: "ePDUIdentHardwareRev", type: "OctetString" },
    [`${E}.1.3.0`]: { name: "ePDUIdentFirmwareRev", type: "OctetString" },
    [`${E}.1.5.0`]: { name: "ePDUIdentModelNumber", type: "OctetString" },
    [`${E}.1.6.0`]: { name: "ePDUIdentSerialNumber", type: "OctetString" },
    [MONITORED]: { name: "ePDUOutletDevMonitoredOutlets", type: "Integer" },
  },
  tables: [
    {
      name: load, // ePDULoadStatusTable
      oid: `${E}.2.3.1.1`,
      index: ["ePDULoadStatusIndex"],
      number: { index: 0 },
      columns: {
        Load: { id: 2, type: "Gauge" }, // ePDULoadStatusLoad, tenths of amps
        LoadState: { id: 3, type: "Integer" }, // ePDULoadStatusLoadState
        PhaseNumber: { id: 4, type: "Integer" }, // ePDULoadStatusPhaseNumber
        BankNumber: { id: 5, type: "Integer" }, // ePDULoadStatusBankNumber (0: a phase row)
        Voltage: { id: 6, type: "Integer" }, // ePDULoadStatusVoltage, tenths of volts
        ActivePower: { id: 7, type: "Integer" }, // ePDULoadStatusActivePower, watts
        ApparentPower: { id: 8, type: "Integer" }, // ePDULoadStatusApparentPower, VA
        PowerFactor: { id: 9, type: "Integer" }, // ePDULoadStatusPowerFactor, hundredths
        Energy: { id: 10, type: "Integer" }, // ePDULoadStatusEnergy, tenths of kWh
      },
    },
    {
      name: "ePDUOutletControlEntry", // ePDUOutletControlTable
      oid: `${E}.3.3.1.1`,
      index: ["ePDUOutletControlIndex"],
      number: { index: 0 },
      columns: {
        Command: { id: 4, type: "Integer", writable: true }, // ePDUOutletControlOutletCommand
      },
    },
    {
      name: config, // ePDUOutletConfigTable
      oid: `${E}.3.4.1.1`,
      index: ["ePDUOutletConfigIndex"],
      number: { index: 0 },
      columns: {
        OutletName: { id: 2, type: "OctetString", writable: true }, // ePDUOutletConfigOutletName
        PowerOnTime: { id: 4, type: "Integer", writable: true }, // ePDUOutletConfigPowerOnTime, s
        PowerOffTime: { id: 5, type: "Integer", writable: true }, // ePDUOutletConfigPowerOffTime, s
        RebootDuration: { id: 6, type: "Integer", writable: true }, // ePDUOutletConfigRebootDuration, s
      },
    },
    {
      name: status, // ePDUOutletStatusTable
      oid: `${E}.3.5.1.1`,
      index: ["ePDUOutletStatusIndex"],
      number: { index: 0 },
      columns: {
        OutletName: { id: 2, type: "OctetString" }, // ePDUOutletStatusOutletName
        OutletState: { id: 4, type: "Integer" }, // ePDUOutletStatusOutletState: outletStatusOn(1), outletStatusOff(2)
        Load: { id: 7, type: "Gauge" }, // ePDUOutletStatusLoad, tenths of amps (outlet-monitored units)
        ActivePower: { id: 8, type: "Gauge" }, // ePDUOutletStatusActivePower, watts (outlet-monitored units)
        Alarm: { id: 9, type: "Integer" }, // ePDUOutletStatusAlarm
        Energy: { id: 13, type: "Gauge" }, // ePDUOutletStatusEnergy, tenths of kWh (outlet-monitored units)
      },
    },
  ],
  identity: {
    serial: { scalar: `${E}.1.6.0` },
    model: { scalar: `${E}.1.5.0` },
    name: { scalar: `${E}.1.1.0` },
    firmware: { scalar: `${E}.1.3.0` },
    hardware: { scalar: `${E}.1.2.0` },
  },
  outlets: {
    table: status,
    // A metered unit without switching answers no outlet status row: identity and loads only.
    withoutOutlets: { units: { scalar: `${E}.1.5.0` } },
    label: { table: status, column: "OutletName" },
    state: { table: status, column: "OutletState", values: { 1: "on", 2: "off" } },
    measurements: [
      { table: status, column: "Load", type: "current", units: "A", scale: 0.1, absentWhen: UNMONITORED },
      {
        table: status,
        column: "ActivePower",
        type: "realPower",
        units: "W",
        scale: 1,
        absentWhen: UNMONITORED,
      },
      { table: status, column: "Energy", type: "energy", units: "kWh", scale: 0.1, absentWhen: UNMONITORED },
    ],
    alarm: { table: status, column: "Alarm", states: CPS_CURRENT_ALARMS, absentWhen: UNMONITORED },
    delays: {
      on: { table: config, column: "PowerOnTime" },
      off: { table: config, column: "PowerOffTime" },
      reboot: { table: config, column: "RebootDuration" },
    },
  },
  entities: [
    {
      prefix: "phase",
      table: load,
      number: { column: "PhaseNumber" },
      where: { table: load, column: "BankNumber", values: [0] },
      fallbackName: "Phase",
      measurements: loadReadings,
      alarm: { table: load, column: "LoadState", states: LOAD_STATES },
    },
    {
      prefix: "bank",
      table: load,
      number: { column: "BankNumber" },
      where: { table: load, column: "BankNumber", values: [0], not: true },
      fallbackName: "Bank",
      measurements: loadReadings,
      alarm: { table: load, column: "LoadState", states: LOAD_STATES },
    },
  ],
  control: {
    table: "ePDUOutletControlEntry",
    column: "Command",
    on: 1, // immediateOn
    off: 2, // immediateOff
    reboot: 3, // immediateReboot
  },
  outletLabel: { table: config, column: "OutletName", maxLength: 255 },
  resetStatsRefusal:
    "CPS-MIB ePDU's only energy reset (ePDUOutletConfigMonitoredEnergyReset) is described as resetting the device energy meter, not one outlet's",
};
