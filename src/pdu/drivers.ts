/**
 * The driver factory: the one place outside the family folders (src/pdu/geist/, src/pdu/snmp/) that
 * knows which families exist. It
 * picks an instance's driver from `Pdus.<id>.Driver` (eslint's no-restricted-imports keeps every
 * other file away from the family code).
 */
import type { InstanceConfig, PduDriverName } from "../config/schema.js";
import type { Logger } from "../log.js";
import type { PduDriver } from "./driver.js";
import { GeistClient } from "./geist/client.js";
import { SnmpDriver } from "./snmp/driver.js";

export interface DriverOptions {
  readonly logger?: Logger;
  /** This replica's member name among several (`Cluster.MemberName`); HTTP drivers send it to the PDU. */
  readonly member?: string;
}

const FACTORIES: Readonly<
  Record<PduDriverName, (instance: InstanceConfig, options: DriverOptions) => PduDriver>
> = {
  geist: (instance, options) =>
    new GeistClient(instance, {
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.member === undefined ? {} : { member: options.member }),
    }),
  snmp: (instance, options) => new SnmpDriver(instance, options),
};

/** The driver of one configured instance (default `geist`). */
export function createDriver(instance: InstanceConfig, options: DriverOptions = {}): PduDriver {
  const create = FACTORIES[instance.Driver ?? "geist"];
  return create(instance, options);
}
/** The event an SNMP trap becomes: the SNMP profiles' trap tables, reached through this seam (src/traps/). */
export { trapEvent } from "./snmp/trap-table.js";
