/**
 * CyberPower rack PDUs that answer CPS-MIB `ePDU2` (1.3.6.1.4.1.3808.1.1.6), the daisy-chain
 * generation (PDU41xxx, PDU44xxx, PDU81xxx firmware that serves it). Every table carries a
 * `…ModuleIndex` column (the unit on the daisy chain: a host answers for every unit, a standalone
 * unit for itself) and a `…Number` column (outlet, phase or bank): rows are keyed by those, not by
 * the table's own index.
 *
 * Scales from the MIB's DESCRIPTIONs: currents in tenths of amps, voltages in tenths of volts,
 * power in watts, apparent power in VA, power factor in hundredths, energy in tenths of kWh.
 * Per-outlet readings come from `ePDU2OutletMeteredStatusTable`, which has a row only for a metered
 * outlet (`ePDU2DeviceInfoMeteredOutlets` counts them): an outlet without a row there has no
 * readings, never zeros.
 */
import type { AlarmState, SnmpProfile } from "../profile.js";
import { states } from "./alarms.js";

const E2 = "1.3.6.1.4.1.3808.1.1.6";
const module = { column: "Module" } as const;
const num = { column: "Number" } as const;

/** ePDU2PhaseStatusLoadState, ePDU2BankStatusLoadState: normal(1), lowLoad(2), nearOverload(3), overload(4). */
const LOAD_STATES: Readonly<Record<number, AlarmState>> = {
  1: states.normal("normal"),
  2: states.warning("lowLoad"),
  3: states.warning("nearOverload"),
  4: states.alarm("overload"),
};

/**
 * ePDU2DeviceStatusLoadState, ePDU2OutletMeteredStatusAlarm: noLoadAlarm(1), underCurrentAlarm(2),
 * nearOverCurrentAlarm(3), overCurrentAlarm(4).
 */
export const CPS_CURRENT_ALARMS: Readonly<Record<number, AlarmState>> = {
  1: states.normal("noLoadAlarm"),
  2: states.warning("underCurrentAlarm"),
  3: states.warning("nearOverCurrentAlarm"),
  4: states.alarm("overCurrentAlarm"),
};

const ident = "ePDU2IdentEntry";
const info = "ePDU2DeviceInfoEntry";
const device = "ePDU2DeviceStatusEntry";
const phase = "ePDU2PhaseStatusEntry";
const bank = "ePDU2BankStatusEntry";
const config = "ePDU2OutletSwitchedConfigEntry";
const status = "ePDU2OutletSwitchedStatusEntry";
const control = "ePDU2OutletSwitchedControlEntry";
const metered = "ePDU2OutletMeteredStatusEntry";

export const CYBERPOWER_EPDU2: SnmpProfile = {
  id: "cyberpower-epdu2",
  family: "CyberPower ePDU2",
  manufacturer: "CyberPower",
  mibs: ["CPS-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.3808."],
  probe: [status, metered, ident],
  tables: [
    {
      name: ident, // ePDU2IdentTable
      oid: `${E2}.2.2.1`,
      index: ["ePDU2IdentIndex"],
      unit: module,
      number: { constant: 1 },
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2IdentModuleIndex
        Name: { id: 3, type: "OctetString" }, // ePDU2IdentName
        HardwareRev: { id: 6, type: "OctetString" }, // ePDU2IdentHardwareRev
        FirmwareRev: { id: 7, type: "OctetString" }, // ePDU2IdentFirmwareRev
        ModelName: { id: 9, type: "OctetString" }, // ePDU2IdentModelName
        SerialNumber: { id: 10, type: "OctetString" }, // ePDU2IdentSerialNumber
      },
    },
    {
      name: info, // ePDU2DeviceInfoTable
      oid: `${E2}.3.3.1`,
      index: ["ePDU2DeviceInfoIndex"],
      unit: module,
      number: { constant: 1 },
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2DeviceInfoModuleIndex
        BreakerRating: { id: 10, type: "Integer" }, // ePDU2DeviceInfoBreakerRating, amps (0: no breakers)
      },
    },
    {
      name: device, // ePDU2DeviceStatusTable
      oid: `${E2}.3.4.1`,
      index: ["ePDU2DeviceStatusIndex"],
      unit: module,
      number: { constant: 1 },
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2DeviceStatusModuleIndex
        LoadState: { id: 4, type: "Integer" }, // ePDU2DeviceStatusLoadState
        CurrentLoad: { id: 5, type: "Gauge" }, // ePDU2DeviceStatusCurrentLoad, tenths of amps
        Energy: { id: 9, type: "Gauge" }, // ePDU2DeviceStatusEnergy, tenths of kWh
        ApparentPower: { id: 15, type: "Gauge" }, // ePDU2DeviceStatusApparentPower, VA
        PowerFactor: { id: 16, type: "Gauge" }, // ePDU2DeviceStatusPowerFactor, hundredths
        PowerLoad: { id: 18, type: "Gauge" }, // ePDU2DeviceStatusPowerLoad, watts
      },
    },
    {
      name: phase, // ePDU2PhaseStatusTable
      oid: `${E2}.4.4.1`,
      index: ["ePDU2PhaseStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2PhaseStatusModuleIndex
        Number: { id: 3, type: "Integer" }, // ePDU2PhaseStatusNumber
        LoadState: { id: 4, type: "Integer" }, // ePDU2PhaseStatusLoadState
        Load: { id: 5, type: "Gauge" }, // ePDU2PhaseStatusLoad, tenths of amps
        Voltage: { id: 6, type: "Gauge" }, // ePDU2PhaseStatusVoltage, tenths of volts
        Power: { id: 7, type: "Gauge" }, // ePDU2PhaseStatusPower, watts
        ApparentPower: { id: 8, type: "Gauge" }, // ePDU2PhaseStatusApparentPower, VA
        PowerFactor: { id: 9, type: "Gauge" }, // ePDU2PhaseStatusPowerFactor, hundredths
      },
    },
    {
      name: bank, // ePDU2BankStatusTable
      oid: `${E2}.5.4.1`,
      index: ["ePDU2BankStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2BankStatusModuleIndex
        Number: { id: 3, type: "Integer" }, // ePDU2BankStatusNumber
        LoadState: { id: 4, type: "Integer" }, // ePDU2BankStatusLoadState
        Load: { id: 5, type: "Gauge" }, // ePDU2BankStatusLoad, tenths of amps
      },
    },
    {
      name: config, // ePDU2OutletSwitchedConfigTable
      oid: `${E2}.6.1.2.1`,
      index: ["ePDU2OutletSwitchedConfigIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2OutletSwitchedConfigModuleIndex
        Number: { id: 3, type: "Integer" }, // ePDU2OutletSwitchedConfigNumber
        Name: { id: 4, type: "OctetString", writable: true }, // ePDU2OutletSwitchedConfigName
        PowerOnTime: { id: 5, type: "Integer", writable: true }, // …PowerOnTime, s (-1: never)
        PowerOffTime: { id: 6, type: "Integer", writable: true }, // …PowerOffTime, s (-1: never)
        RebootDuration: { id: 7, type: "Integer", writable: true }, // …RebootDuration, s (5..60)
      },
    },
    {
      name: status, // ePDU2OutletSwitchedStatusTable
      oid: `${E2}.6.1.4.1`,
      index: ["ePDU2OutletSwitchedStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2OutletSwitchedStatusModuleIndex
        Number: { id: 3, type: "Integer" }, // ePDU2OutletSwitchedStatusNumber
        Name: { id: 4, type: "OctetString" }, // ePDU2OutletSwitchedStatusName
        State: { id: 5, type: "Integer" }, // ePDU2OutletSwitchedStatusState: outletStatusOn(1), outletStatusOff(2)
      },
    },
    {
      name: control, // ePDU2OutletSwitchedControlTable
      oid: `${E2}.6.1.5.1`,
      index: ["ePDU2OutletSwitchedControlIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2OutletSwitchedControlModuleIndex
        Number: { id: 3, type: "Integer" }, // ePDU2OutletSwitchedControlNumber
        Command: { id: 5, type: "Integer", writable: true }, // ePDU2OutletSwitchedControlCommand
      },
    },
    {
      name: metered, // ePDU2OutletMeteredStatusTable (a row per metered outlet)
      oid: `${E2}.6.2.4.1`,
      index: ["ePDU2OutletMeteredStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // ePDU2OutletMeteredStatusModuleIndex
        Number: { id: 3, type: "Integer" }, // ePDU2OutletMeteredStatusNumber
        Name: { id: 4, type: "OctetString" }, // ePDU2OutletMeteredStatusName
        Alarm: { id: 5, type: "Integer" }, // ePDU2OutletMeteredStatusAlarm
        Load: { id: 6, type: "Gauge" }, // ePDU2OutletMeteredStatusLoad, tenths of amps
        ActivePower: { id: 7, type: "Gauge" }, // ePDU2OutletMeteredStatusActivePower, watts
        Energy: { id: 11, type: "Gauge" }, // ePDU2OutletMeteredStatusEnergy, tenths of kWh
      },
    },
  ],
  identity: {
    serial: { table: ident, column: "SerialNumber" },
    model: { table: ident, column: "ModelName" },
    name: { table: ident, column: "Name" },
    firmware: { table: ident, column: "FirmwareRev" },
    hardware: { table: ident, column: "HardwareRev" },
  },
  outlets: {
    table: status,
    // A metered unit without switching has metered outlet rows only; one with neither, its identity.
    alsoFrom: [metered],
    withoutOutlets: { units: { table: ident, column: "ModelName" } },
    label: { table: status, column: "Name", fallback: { table: metered, column: "Name" } },
    state: { table: status, column: "State", values: { 1: "on", 2: "off" } },
    measurements: [
      { table: metered, column: "Load", type: "current", units: "A", scale: 0.1 },
      { table: metered, column: "ActivePower", type: "realPower", units: "W", scale: 1 },
      { table: metered, column: "Energy", type: "energy", units: "kWh", scale: 0.1 },
    ],
    alarm: { table: metered, column: "Alarm", states: CPS_CURRENT_ALARMS },
    delays: {
      on: { table: config, column: "PowerOnTime" },
      off: { table: config, column: "PowerOffTime" },
      reboot: { table: config, column: "RebootDuration" },
    },
  },
  entities: [
    {
      prefix: "total",
      table: device,
      fallbackName: "Total",
      measurements: [
        { table: device, column: "CurrentLoad", type: "current", units: "A", scale: 0.1 },
        { table: device, column: "PowerLoad", type: "realPower", units: "W", scale: 1 },
        { table: device, column: "ApparentPower", type: "apparentPower", units: "VA", scale: 1 },
        { table: device, column: "PowerFactor", type: "powerFactor", units: "%", scale: 1 },
        { table: device, column: "Energy", type: "energy", units: "kWh", scale: 0.1 },
      ],
      alarm: { table: device, column: "LoadState", states: CPS_CURRENT_ALARMS },
      rating: { table: info, column: "BreakerRating", scale: 1 },
    },
    {
      prefix: "phase",
      table: phase,
      fallbackName: "Phase",
      measurements: [
        { table: phase, column: "Load", type: "current", units: "A", scale: 0.1 },
        { table: phase, column: "Voltage", type: "voltage", units: "V", scale: 0.1 },
        { table: phase, column: "Power", type: "realPower", units: "W", scale: 1 },
        { table: phase, column: "ApparentPower", type: "apparentPower", units: "VA", scale: 1 },
        { table: phase, column: "PowerFactor", type: "powerFactor", units: "%", scale: 1 },
      ],
      alarm: { table: phase, column: "LoadState", states: LOAD_STATES },
    },
    {
      prefix: "bank",
      table: bank,
      fallbackName: "Bank",
      measurements: [{ table: bank, column: "Load", type: "current", units: "A", scale: 0.1 }],
      alarm: { table: bank, column: "LoadState", states: LOAD_STATES },
    },
  ],
  control: {
    table: control,
    column: "Command",
    on: 1, // immediateOn
    off: 2, // immediateOff
    reboot: 3, // immediateReboot
  },
  // DisplayString: the MIB leaves the size to the device; 255 is DisplayString's own bound.
  outletLabel: { table: config, column: "Name", maxLength: 255 },
  resetStatsRefusal:
    "CPS-MIB ePDU2 resets the energy of a whole unit (ePDU2DeviceConfigEnergyReset), not of one outlet",
};
