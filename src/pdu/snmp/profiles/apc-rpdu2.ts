/**
 * APC rack PDUs of the AP8xxx generation (switched and metered-by-outlet), PowerNet-MIB `rPDU2`
 * (1.3.6.1.4.1.318.1.1.26). Every table carries a `…Module` column (the unit in a network port
 * sharing group) and a `…Number` column (the outlet, phase or bank number): the bridge keys rows by
 * those, not by the table's own index.
 *
 * Scales from the MIB's DESCRIPTIONs: currents in tenths of amps, device and phase power in
 * hundredths of kW (and kVA), energy in tenths of kWh, power factor in hundredths, temperature in
 * tenths of °C, humidity in percent; -1 is "not supported". rPDU2OutletMeteredStatusPower states no
 * unit: the outlet thresholds of the same table group (rPDU2OutletMeteredConfig…Threshold) are in
 * watts, and so is this.
 */
import type { SnmpProfile } from "../profile.js";
import { APC_LOAD_STATES, APC_SENSOR_STATES } from "./alarms.js";

const RPDU2 = "1.3.6.1.4.1.318.1.1.26";
const module = { column: "Module" } as const;
const num = { column: "Number" } as const;
const NS = [-1];
const sensor = "rPDU2SensorTempHumidityStatusEntry";

export const APC_RPDU2: SnmpProfile = {
  id: "apc-rpdu2",
  family: "APC rPDU2 (AP8xxx)",
  manufacturer: "APC",
  mibs: ["PowerNet-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.318."],
  // A switched unit answers the switched outlet table; a metered one (AP84xx, AP88xx) only its ident table.
  probe: ["rPDU2OutletSwitchedStatusEntry", "rPDU2IdentEntry"],
  tables: [
    {
      name: "rPDU2IdentEntry", // rPDU2IdentTable
      oid: `${RPDU2}.2.1`,
      index: ["rPDU2IdentIndex"],
      unit: module,
      number: { constant: 1 },
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2IdentModule
        Name: { id: 3, type: "OctetString" }, // rPDU2IdentName
        HardwareRev: { id: 5, type: "OctetString" }, // rPDU2IdentHardwareRev
        FirmwareRev: { id: 6, type: "OctetString" }, // rPDU2IdentFirmwareRev
        ModelNumber: { id: 8, type: "OctetString" }, // rPDU2IdentModelNumber
        SerialNumber: { id: 9, type: "OctetString" }, // rPDU2IdentSerialNumber
      },
    },
    {
      name: "rPDU2DevicePropertiesEntry", // rPDU2DevicePropertiesTable
      oid: `${RPDU2}.4.2.1`,
      index: ["rPDU2DevicePropertiesIndex"],
      unit: module,
      number: { constant: 1 },
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2DevicePropertiesModule
        MaxCurrentRating: { id: 9, type: "Integer" }, // rPDU2DevicePropertiesMaxCurrentRating, amps
      },
    },
    {
      name: "rPDU2DeviceStatusEntry", // rPDU2DeviceStatusTable
      oid: `${RPDU2}.4.3.1`,
      index: ["rPDU2DeviceStatusIndex"],
      unit: module,
      number: { constant: 1 },
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2DeviceStatusModule
        LoadState: { id: 4, type: "Integer" }, // rPDU2DeviceStatusLoadState
        Power: { id: 5, type: "Integer" }, // rPDU2DeviceStatusPower, hundredths of kW
        Energy: { id: 9, type: "Integer" }, // rPDU2DeviceStatusEnergy, tenths of kWh
        ApparentPower: { id: 16, type: "Integer" }, // rPDU2DeviceStatusApparentPower, hundredths of kVA
        PowerFactor: { id: 17, type: "Integer" }, // rPDU2DeviceStatusPowerFactor, hundredths
      },
    },
    {
      name: "rPDU2PhaseStatusEntry", // rPDU2PhaseStatusTable
      oid: `${RPDU2}.6.3.1`,
      index: ["rPDU2PhaseStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2PhaseStatusModule
        Number: { id: 3, type: "Integer" }, // rPDU2PhaseStatusNumber
        LoadState: { id: 4, type: "Integer" }, // rPDU2PhaseStatusLoadState
        Current: { id: 5, type: "Integer" }, // rPDU2PhaseStatusCurrent, tenths of amps
        Voltage: { id: 6, type: "Integer" }, // rPDU2PhaseStatusVoltage, volts
        Power: { id: 7, type: "Integer" }, // rPDU2PhaseStatusPower, hundredths of kW
        ApparentPower: { id: 8, type: "Integer" }, // rPDU2PhaseStatusApparentPower, hundredths of kVA
        PowerFactor: { id: 9, type: "Integer" }, // rPDU2PhaseStatusPowerFactor, hundredths
      },
    },
    {
      name: "rPDU2BankStatusEntry", // rPDU2BankStatusTable
      oid: `${RPDU2}.8.3.1`,
      index: ["rPDU2BankStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2BankStatusModule
        Number: { id: 3, type: "Integer" }, // rPDU2BankStatusNumber
        LoadState: { id: 4, type: "Integer" }, // rPDU2BankStatusLoadState
        Current: { id: 5, type: "Integer" }, // rPDU2BankStatusCurrent, tenths of amps
      },
    },
    {
      name: "rPDU2OutletSwitchedConfigEntry", // rPDU2OutletSwitchedConfigTable
      oid: `${RPDU2}.9.2.1.1`,
      index: ["rPDU2OutletSwitchedConfigIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2OutletSwitchedConfigModule
        Name: { id: 3, type: "OctetString", writable: true }, // rPDU2OutletSwitchedConfigName
        Number: { id: 4, type: "Integer" }, // rPDU2OutletSwitchedConfigNumber
        PowerOnTime: { id: 5, type: "Integer", writable: true }, // rPDU2OutletSwitchedConfigPowerOnTime, s
        PowerOffTime: { id: 6, type: "Integer", writable: true }, // rPDU2OutletSwitchedConfigPowerOffTime, s
        RebootDuration: { id: 7, type: "Integer", writable: true }, // rPDU2OutletSwitchedConfigRebootDuration, s
      },
    },
    {
      name: "rPDU2OutletSwitchedPropertiesEntry", // rPDU2OutletSwitchedPropertiesTable
      oid: `${RPDU2}.9.2.2.1`,
      index: ["rPDU2OutletSwitchedPropertiesIndex"],
      static: true, // the outlets' banks
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2OutletSwitchedPropertiesModule
        Number: { id: 4, type: "Integer" }, // rPDU2OutletSwitchedPropertiesNumber
        Bank: { id: 6, type: "Integer" }, // rPDU2OutletSwitchedPropertiesBank: "The numeric bank ID"
      },
    },
    {
      name: "rPDU2OutletSwitchedStatusEntry", // rPDU2OutletSwitchedStatusTable
      oid: `${RPDU2}.9.2.3.1`,
      index: ["rPDU2OutletSwitchedStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2OutletSwitchedStatusModule
        Name: { id: 3, type: "OctetString" }, // rPDU2OutletSwitchedStatusName
        Number: { id: 4, type: "Integer" }, // rPDU2OutletSwitchedStatusNumber
        State: { id: 5, type: "Integer" }, // rPDU2OutletSwitchedStatusState: off(1), on(2)
      },
    },
    {
      name: "rPDU2OutletSwitchedControlEntry", // rPDU2OutletSwitchedControlTable
      oid: `${RPDU2}.9.2.4.1`,
      index: ["rPDU2OutletSwitchedControlIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2OutletSwitchedControlModule
        Number: { id: 4, type: "Integer" }, // rPDU2OutletSwitchedControlNumber
        Command: { id: 5, type: "Integer", writable: true }, // rPDU2OutletSwitchedControlCommand
      },
    },
    {
      name: "rPDU2OutletMeteredPropertiesEntry", // rPDU2OutletMeteredPropertiesTable
      oid: `${RPDU2}.9.4.2.1`,
      index: ["rPDU2OutletMeteredPropertiesIndex"],
      static: true, // the outlets' banks
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2OutletMeteredPropertiesModule
        Number: { id: 4, type: "Integer" }, // rPDU2OutletMeteredPropertiesNumber
        Bank: { id: 7, type: "Integer" }, // rPDU2OutletMeteredPropertiesBank: "This outlet's numeric bank ID"
      },
    },
    {
      name: "rPDU2OutletMeteredStatusEntry", // rPDU2OutletMeteredStatusTable (metered-by-outlet models)
      oid: `${RPDU2}.9.4.3.1`,
      index: ["rPDU2OutletMeteredStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2OutletMeteredStatusModule
        Name: { id: 3, type: "OctetString" }, // rPDU2OutletMeteredStatusName
        Number: { id: 4, type: "Integer" }, // rPDU2OutletMeteredStatusNumber
        State: { id: 5, type: "Integer" }, // rPDU2OutletMeteredStatusState (load state)
        Current: { id: 6, type: "Integer" }, // rPDU2OutletMeteredStatusCurrent, tenths of amps
        Power: { id: 7, type: "Integer" }, // rPDU2OutletMeteredStatusPower, watts
        Energy: { id: 11, type: "Integer" }, // rPDU2OutletMeteredStatusEnergy, tenths of kWh
      },
    },
    {
      name: "rPDU2SensorTempHumidityStatusEntry", // rPDU2SensorTempHumidityStatusTable
      oid: `${RPDU2}.10.2.2.1`,
      index: ["rPDU2SensorTempHumidityStatusIndex"],
      unit: module,
      number: num,
      columns: {
        Module: { id: 2, type: "Integer" }, // rPDU2SensorTempHumidityStatusModule
        Name: { id: 3, type: "OctetString" }, // rPDU2SensorTempHumidityStatusName
        Number: { id: 4, type: "Integer" }, // rPDU2SensorTempHumidityStatusNumber
        // temperatureOnly(1), temperatureHumidity(2), commsLost(3), notInstalled(4)
        Type: { id: 5, type: "Integer" }, // rPDU2SensorTempHumidityStatusType
        CommStatus: { id: 6, type: "Integer" }, // notInstalled(1), commsOK(2), commsLost(3)
        TempC: { id: 8, type: "Integer" }, // rPDU2SensorTempHumidityStatusTempC, tenths of °C
        TempStatus: { id: 9, type: "Integer" }, // notPresent(1) "no probe is attached", ...
        RelativeHumidity: { id: 10, type: "Integer" }, // rPDU2SensorTempHumidityStatusRelativeHumidity, %
        HumidityStatus: { id: 11, type: "Integer" }, // notPresent(1), ...
      },
    },
  ],
  identity: {
    serial: { table: "rPDU2IdentEntry", column: "SerialNumber" },
    model: { table: "rPDU2IdentEntry", column: "ModelNumber" },
    name: { table: "rPDU2IdentEntry", column: "Name" },
    firmware: { table: "rPDU2IdentEntry", column: "FirmwareRev" },
    hardware: { table: "rPDU2IdentEntry", column: "HardwareRev" },
  },
  outlets: {
    table: "rPDU2OutletSwitchedStatusEntry",
    // A metered-by-outlet unit without switching (AP88xx) has only metered outlet rows.
    alsoFrom: ["rPDU2OutletMeteredStatusEntry"],
    // A metered unit without outlet metering (AP84xx) has neither: its ident row is the unit.
    withoutOutlets: { units: { table: "rPDU2IdentEntry", column: "ModelNumber" } },
    label: {
      table: "rPDU2OutletSwitchedStatusEntry",
      column: "Name",
      fallback: { table: "rPDU2OutletMeteredStatusEntry", column: "Name" },
    },
    state: { table: "rPDU2OutletSwitchedStatusEntry", column: "State", values: { 1: "off", 2: "on" } },
    measurements: [
      { table: "rPDU2OutletMeteredStatusEntry", column: "Current", type: "current", units: "A", scale: 0.1 },
      { table: "rPDU2OutletMeteredStatusEntry", column: "Power", type: "realPower", units: "W", scale: 1 },
      { table: "rPDU2OutletMeteredStatusEntry", column: "Energy", type: "energy", units: "kWh", scale: 0.1 },
    ],
    alarm: { table: "rPDU2OutletMeteredStatusEntry", column: "State", states: APC_LOAD_STATES },
    delays: {
      on: { table: "rPDU2OutletSwitchedConfigEntry", column: "PowerOnTime" },
      off: { table: "rPDU2OutletSwitchedConfigEntry", column: "PowerOffTime" },
      reboot: { table: "rPDU2OutletSwitchedConfigEntry", column: "RebootDuration" },
    },
    // The outlet's bank (rPDU2BankStatusNumber of the bank entities), from either properties table.
    feedsFrom: [
      { number: { table: "rPDU2OutletSwitchedPropertiesEntry", column: "Bank" }, prefix: "bank" },
      { number: { table: "rPDU2OutletMeteredPropertiesEntry", column: "Bank" }, prefix: "bank" },
    ],
  },
  entities: [
    {
      prefix: "total",
      table: "rPDU2DeviceStatusEntry",
      fallbackName: "Total",
      measurements: [
        {
          table: "rPDU2DeviceStatusEntry",
          column: "Power",
          type: "realPower",
          units: "W",
          scale: 10,
          absentIf: NS,
        },
        {
          table: "rPDU2DeviceStatusEntry",
          column: "ApparentPower",
          type: "apparentPower",
          units: "VA",
          scale: 10,
          absentIf: NS,
        },
        {
          table: "rPDU2DeviceStatusEntry",
          column: "PowerFactor",
          type: "powerFactor",
          units: "%",
          scale: 1,
          absentIf: NS,
        },
        {
          table: "rPDU2DeviceStatusEntry",
          column: "Energy",
          type: "energy",
          units: "kWh",
          scale: 0.1,
          absentIf: NS,
        },
      ],
      // notsupported(5): "Models that do not support this feature"
      alarm: {
        table: "rPDU2DeviceStatusEntry",
        column: "LoadState",
        states: APC_LOAD_STATES,
        absentIf: [5],
      },
      rating: { table: "rPDU2DevicePropertiesEntry", column: "MaxCurrentRating", scale: 1 },
    },
    {
      prefix: "phase",
      table: "rPDU2PhaseStatusEntry",
      fallbackName: "Phase",
      measurements: [
        { table: "rPDU2PhaseStatusEntry", column: "Current", type: "current", units: "A", scale: 0.1 },
        {
          table: "rPDU2PhaseStatusEntry",
          column: "Voltage",
          type: "voltage",
          units: "V",
          scale: 1,
          absentIf: NS,
        },
        {
          table: "rPDU2PhaseStatusEntry",
          column: "Power",
          type: "realPower",
          units: "W",
          scale: 10,
          absentIf: NS,
        },
        {
          table: "rPDU2PhaseStatusEntry",
          column: "ApparentPower",
          type: "apparentPower",
          units: "VA",
          scale: 10,
          absentIf: NS,
        },
        {
          table: "rPDU2PhaseStatusEntry",
          column: "PowerFactor",
          type: "powerFactor",
          units: "%",
          scale: 1,
          absentIf: NS,
        },
      ],
      alarm: { table: "rPDU2PhaseStatusEntry", column: "LoadState", states: APC_LOAD_STATES },
    },
    {
      prefix: "bank",
      table: "rPDU2BankStatusEntry",
      fallbackName: "Bank",
      measurements: [
        { table: "rPDU2BankStatusEntry", column: "Current", type: "current", units: "A", scale: 0.1 },
      ],
      alarm: { table: "rPDU2BankStatusEntry", column: "LoadState", states: APC_LOAD_STATES },
    },
    {
      prefix: "sensor",
      table: sensor,
      name: { table: sensor, column: "Name" },
      fallbackName: "Sensor",
      // A probe row that says no probe is there: type or comm status notInstalled.
      absentWhen: [
        { table: sensor, column: "Type", values: [4] },
        { table: sensor, column: "CommStatus", values: [1] },
      ],
      measurements: [
        {
          table: sensor,
          column: "TempC",
          type: "temperature",
          units: "°C",
          scale: 0.1,
          // No probe attached (TempStatus notPresent), or its readings lost (commsLost).
          absentWhen: [
            { table: sensor, column: "TempStatus", values: [1] },
            { table: sensor, column: "CommStatus", values: [3] },
            { table: sensor, column: "Type", values: [3] },
          ],
        },
        {
          table: sensor,
          column: "RelativeHumidity",
          type: "humidity",
          units: "%",
          scale: 1,
          // No humidity probe (HumidityStatus notPresent, a temperatureOnly probe), or commsLost.
          absentWhen: [
            { table: sensor, column: "HumidityStatus", values: [1] },
            { table: sensor, column: "Type", values: [1, 3] },
            { table: sensor, column: "CommStatus", values: [3] },
          ],
        },
      ],
      alarm: { table: sensor, column: "TempStatus", states: APC_SENSOR_STATES, absentIf: [1] },
    },
  ],
  control: {
    table: "rPDU2OutletSwitchedControlEntry",
    column: "Command",
    on: 1, // immediateOn
    off: 2, // immediateOff
    reboot: 3, // immediateReboot
  },
  outletLabel: { table: "rPDU2OutletSwitchedConfigEntry", column: "Name", maxLength: 255 },
  resetStatsRefusal:
    "PowerNet-MIB resets the energy of every outlet of the unit at once (rPDU2DeviceConfigOutletsEnergyReset), not of one outlet",
};
