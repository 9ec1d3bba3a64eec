/**
 * Raritan PX2 and PX3, PDU2-MIB (1.3.6.1.4.1.13742.6). Tables are indexed by `pduId` (1 on a PX2/PX3)
 * and the outlet, inlet or overcurrent protector id; the measurement tables have one row per sensor
 * (index `…, sensorType`, SensorTypeEnumeration: rmsCurrent(1), rmsVoltage(4), activePower(5),
 * apparentPower(6), powerFactor(7), activeEnergy(8), trip(15)). A reading is
 * `measurements…SensorValue` scaled by the matching `…SensorDecimalDigits` of the sensor
 * configuration table; the base units are the MIB's SensorUnitsEnumeration (amp, volt, watt,
 * voltamp, wattHour; power factor has none and is a ratio, shown in %).
 */
import type { AbsentWhen, MeasurementDef, SnmpProfile } from "../profile.js";
import { RARITAN_NUMERIC_STATES, RARITAN_TRIP_STATES } from "./alarms.js";

const PDU2 = "1.3.6.1.4.1.13742.6";
const unit = { index: 0 } as const;

/** SensorTypeEnumeration values read, with the bridge's type, units and scale from the base unit. */
const SENSORS = [
  { sensorType: 1, type: "current", units: "A", scale: 1 }, // rmsCurrent, amp
  { sensorType: 4, type: "voltage", units: "V", scale: 1 }, // rmsVoltage, volt
  { sensorType: 5, type: "realPower", units: "W", scale: 1 }, // activePower, watt
  { sensorType: 6, type: "apparentPower", units: "VA", scale: 1 }, // apparentPower, voltamp
  { sensorType: 7, type: "powerFactor", units: "%", scale: 100 }, // powerFactor, a ratio
  { sensorType: 8, type: "energy", units: "kWh", scale: 0.001 }, // activeEnergy, wattHour
] as const;

/**
 * Where a sensor reading is not there: `…SensorIsAvailable` false(2) ("The sensor is present",
 * TruthValue) or `…SensorState` unavailable(-1) ("unavailable means no sensor reading"; the value
 * "does not apply to sensors that are not present or are in an unavailable state").
 */
function notThere(table: string, sensorType: number): AbsentWhen[] {
  return [
    { table, column: "IsAvailable", sensorType, values: [2] },
    { table, column: "State", sensorType, values: [-1] },
  ];
}

function sensors(values: string, config: string, column: string, digits: string): MeasurementDef[] {
  return SENSORS.map((s) => ({
    table: values,
    column,
    sensorType: s.sensorType,
    type: s.type,
    units: s.units,
    scale: s.scale,
    decimals: { table: config, column: digits, sensorType: s.sensorType },
    absentWhen: notThere(values, s.sensorType),
  }));
}

/** A sensor measurement table's columns. */
const MEASUREMENT_COLUMNS = {
  IsAvailable: { id: 2, type: "Integer" }, // measurements…SensorIsAvailable, TruthValue: true(1), false(2)
  State: { id: 3, type: "Integer" }, // measurements…SensorState, SensorStateEnumeration
  Value: { id: 4, type: "Unsigned" }, // measurements…SensorValue
} as const;
const CONFIG_COLUMNS = {
  DecimalDigits: { id: 7, type: "Unsigned" }, // …SensorDecimalDigits
} as const;

export const RARITAN_PX2: SnmpProfile = {
  id: "raritan-px2",
  family: "Raritan PX2/PX3 (PDU2-MIB)",
  manufacturer: "Raritan",
  mibs: ["PDU2-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.13742."],
  probe: "outletConfigurationEntry",
  tables: [
    {
      name: "nameplateEntry", // nameplateTable
      oid: `${PDU2}.3.2.1.1`,
      index: ["pduId"],
      unit,
      number: { constant: 1 },
      columns: {
        pduManufacturer: { id: 2, type: "OctetString" },
        pduModel: { id: 3, type: "OctetString" },
        pduSerialNumber: { id: 4, type: "OctetString" },
        pduRatedCurrent: { id: 6, type: "OctetString" }, // DisplayString
      },
    },
    {
      name: "unitConfigurationEntry", // unitConfigurationTable
      oid: `${PDU2}.3.2.2.1`,
      index: ["pduId"],
      unit,
      number: { constant: 1 },
      columns: {
        pxMACAddress: { id: 11, type: "OctetString" }, // MacAddress
        pduName: { id: 13, type: "OctetString", writable: true },
      },
    },
    {
      name: "controllerConfigurationEntry", // controllerConfigurationTable: mainController(1) first
      oid: `${PDU2}.3.2.3.1`,
      index: ["pduId", "boardType", "boardIndex"],
      unit,
      number: { index: 1 },
      columns: {
        boardVersion: { id: 4, type: "OctetString" },
        boardFirmwareVersion: { id: 6, type: "OctetString" },
      },
    },
    {
      name: "inletConfigurationEntry", // inletConfigurationTable
      oid: `${PDU2}.3.3.3.1`,
      index: ["pduId", "inletId"],
      unit,
      number: { index: 1 },
      columns: {
        inletLabel: { id: 2, type: "OctetString" },
        inletName: { id: 3, type: "OctetString", writable: true },
        inletRatedCurrent: { id: 7, type: "OctetString" }, // DisplayString
      },
    },
    {
      name: "inletSensorConfigurationEntry", // inletSensorConfigurationTable
      oid: `${PDU2}.3.3.4.1`,
      index: ["pduId", "inletId", "sensorType"],
      unit,
      number: { index: 1 },
      sensor: { index: 2 },
      columns: CONFIG_COLUMNS, // inletSensorDecimalDigits
    },
    {
      name: "overCurrentProtectorConfigurationEntry", // overCurrentProtectorConfigurationTable
      oid: `${PDU2}.3.4.3.1`,
      index: ["pduId", "overCurrentProtectorIndex"],
      unit,
      number: { index: 1 },
      columns: {
        overCurrentProtectorLabel: { id: 2, type: "OctetString" },
        overCurrentProtectorName: { id: 3, type: "OctetString", writable: true },
        overCurrentProtectorRatedCurrent: { id: 5, type: "OctetString" }, // DisplayString
      },
    },
    {
      name: "overCurrentProtectorSensorConfigurationEntry",
      oid: `${PDU2}.3.4.4.1`,
      index: ["pduId", "overCurrentProtectorIndex", "sensorType"],
      unit,
      number: { index: 1 },
      sensor: { index: 2 },
      columns: CONFIG_COLUMNS, // overCurrentProtectorSensorDecimalDigits
    },
    {
      name: "outletConfigurationEntry", // outletConfigurationTable
      oid: `${PDU2}.3.5.3.1`,
      index: ["pduId", "outletId"],
      unit,
      number: { index: 1 },
      columns: {
        outletLabel: { id: 2, type: "OctetString" },
        outletName: { id: 3, type: "OctetString", writable: true },
        outletRatedCurrent: { id: 7, type: "OctetString" }, // DisplayString
        // RowPointer: the OID of the overCurrentProtectorLabel (or inletLabel) of what powers it
        outletPowerSource: { id: 33, type: "ObjectIdentifier" },
      },
    },
    {
      name: "outletSensorConfigurationEntry", // outletSensorConfigurationTable
      oid: `${PDU2}.3.5.4.1`,
      index: ["pduId", "outletId", "sensorType"],
      unit,
      number: { index: 1 },
      sensor: { index: 2 },
      columns: CONFIG_COLUMNS, // outletSensorDecimalDigits
    },
    {
      name: "outletSwitchControlEntry", // outletSwitchControlTable
      oid: `${PDU2}.4.1.2.1`,
      index: ["pduId", "outletId"],
      unit,
      number: { index: 1 },
      columns: {
        switchingOperation: { id: 2, type: "Integer", writable: true }, // off(0), on(1), cycle(2)
        outletSwitchingState: { id: 3, type: "Integer" }, // SensorStateEnumeration: on(7), off(8)
      },
    },
    {
      name: "inletSensorMeasurementsEntry", // inletSensorMeasurementsTable
      oid: `${PDU2}.5.2.3.1`,
      index: ["pduId", "inletId", "sensorType"],
      unit,
      number: { index: 1 },
      sensor: { index: 2 },
      columns: MEASUREMENT_COLUMNS,
    },
    {
      name: "overCurrentProtectorSensorMeasurementsEntry",
      oid: `${PDU2}.5.3.3.1`,
      index: ["pduId", "overCurrentProtectorIndex", "sensorType"],
      unit,
      number: { index: 1 },
      sensor: { index: 2 },
      columns: MEASUREMENT_COLUMNS,
    },
    {
      name: "outletSensorMeasurementsEntry", // outletSensorMeasurementsTable
      oid: `${PDU2}.5.4.3.1`,
      index: ["pduId", "outletId", "sensorType"],
      unit,
      number: { index: 1 },
      sensor: { index: 2 },
      columns: MEASUREMENT_COLUMNS,
    },
  ],
  identity: {
    serial: { table: "nameplateEntry", column: "pduSerialNumber" },
    model: { table: "nameplateEntry", column: "pduModel" },
    manufacturer: { table: "nameplateEntry", column: "pduManufacturer" },
    name: { table: "unitConfigurationEntry", column: "pduName" },
    mac: { table: "unitConfigurationEntry", column: "pxMACAddress" },
    firmware: { table: "controllerConfigurationEntry", column: "boardFirmwareVersion" },
    hardware: { table: "controllerConfigurationEntry", column: "boardVersion" },
  },
  outlets: {
    table: "outletConfigurationEntry",
    name: { table: "outletConfigurationEntry", column: "outletLabel" },
    label: { table: "outletConfigurationEntry", column: "outletName" },
    // SensorStateEnumeration on(7), off(8); unavailable(-1) or no switch table (a PXE, not
    // switched): the outlet's onOff(14) sensor, whose states are unavailable, on, off.
    state: {
      table: "outletSwitchControlEntry",
      column: "outletSwitchingState",
      values: { 7: "on", 8: "off" },
      fallback: {
        table: "outletSensorMeasurementsEntry",
        column: "State",
        sensorType: 14,
        values: { 7: "on", 8: "off" },
        absentWhen: notThere("outletSensorMeasurementsEntry", 14),
      },
    },
    measurements: sensors(
      "outletSensorMeasurementsEntry",
      "outletSensorConfigurationEntry",
      "Value",
      "DecimalDigits",
    ),
    alarm: {
      table: "outletSensorMeasurementsEntry",
      column: "State",
      sensorType: 1,
      states: RARITAN_NUMERIC_STATES,
      absentWhen: notThere("outletSensorMeasurementsEntry", 1),
    },
    rating: { table: "outletConfigurationEntry", column: "outletRatedCurrent", scale: 1, text: true },
    // outletPowerSource: "If the power source is an overcurrent protector, it contains the OID of an
    // overCurrentProtectorLabel"; an inlet's is an inletLabel's (a transfer switch is no entity here).
    feedsFrom: [
      {
        pointer: { table: "outletConfigurationEntry", column: "outletPowerSource" },
        targets: [
          { oid: `${PDU2}.3.4.3.1.2`, prefix: "breaker" }, // overCurrentProtectorLabel
          { oid: `${PDU2}.3.3.3.1.2`, prefix: "inlet" }, // inletLabel
        ],
      },
    ],
  },
  entities: [
    {
      prefix: "inlet",
      table: "inletConfigurationEntry",
      name: { table: "inletConfigurationEntry", column: "inletLabel" },
      fallbackName: "Inlet",
      measurements: sensors(
        "inletSensorMeasurementsEntry",
        "inletSensorConfigurationEntry",
        "Value",
        "DecimalDigits",
      ),
      alarm: {
        table: "inletSensorMeasurementsEntry",
        column: "State",
        sensorType: 1,
        states: RARITAN_NUMERIC_STATES,
        absentWhen: notThere("inletSensorMeasurementsEntry", 1),
      },
      rating: { table: "inletConfigurationEntry", column: "inletRatedCurrent", scale: 1, text: true },
    },
    {
      prefix: "breaker",
      table: "overCurrentProtectorConfigurationEntry",
      name: { table: "overCurrentProtectorConfigurationEntry", column: "overCurrentProtectorLabel" },
      fallbackName: "Breaker",
      measurements: [
        {
          table: "overCurrentProtectorSensorMeasurementsEntry",
          column: "Value",
          sensorType: 1,
          type: "current",
          units: "A",
          scale: 1,
          decimals: {
            table: "overCurrentProtectorSensorConfigurationEntry",
            column: "DecimalDigits",
            sensorType: 1,
          },
          absentWhen: notThere("overCurrentProtectorSensorMeasurementsEntry", 1),
        },
      ],
      alarm: {
        table: "overCurrentProtectorSensorMeasurementsEntry",
        column: "State",
        sensorType: 15, // trip
        states: RARITAN_TRIP_STATES,
        reportsTrip: true,
        absentWhen: notThere("overCurrentProtectorSensorMeasurementsEntry", 15),
      },
      rating: {
        table: "overCurrentProtectorConfigurationEntry",
        column: "overCurrentProtectorRatedCurrent",
        scale: 1,
        text: true,
      },
    },
  ],
  control: {
    table: "outletSwitchControlEntry",
    column: "switchingOperation",
    on: 1,
    off: 0,
    reboot: 2, // cycle
  },
  outletLabel: { table: "outletConfigurationEntry", column: "outletName", maxLength: 255 },
  // outletSensorResetValue (outletSensorControlTable, index pduId, outletId, sensorType): "Only
  // accumulating sensors (e.g. energy counters) can be reset, and currently the only supported value is 0".
  resetEnergy: { name: "outletSensorResetValue", oid: `${PDU2}.4.7.1.1.1`, suffix: [8], value: 0 },
};
