/**
 * The trap flood of `--only traps` (bench/traps.ts), in its own process so that sending costs the
 * bridge's process nothing: `node trap-flood-child.js <to> <from> <port> <per second> <ms>
 * <community>` sends SNMPv2c rPDUOutletOn traps from the loopback address `from` (a configured
 * PDU's, or one no instance has) to the receiver on `to`:`port` at that rate for that long, and
 * prints `{"sent": n}`.
 */
import snmp from "net-snmp";

const [
  host = "127.0.0.1",
  from = "127.0.0.1",
  port = "162",
  perSecond = "1000",
  ms = "1000",
  community = "public",
] = process.argv.slice(2);
const rate = Number(perSecond);
const total = Math.floor((Number(ms) / 1000) * rate);
const session = snmp.createSession(host, community, {
  trapPort: Number(port),
  sourceAddress: from,
  version: snmp.Version2c,
  transport: host.includes(":") ? "udp6" : "udp4",
});
session.on("error", () => undefined);
// rPDUOutletOn with rPDUOutletControlIndex: outlet 1 (PowerNet-MIB).
const varbinds = [{ oid: "1.3.6.1.4.1.318.1.1.12.3.3.1.1.1.0", type: snmp.ObjectType.Integer, value: 1 }];
let sent = 0;
const started = Date.now();
while (sent < total) {
  const due = Math.min(Math.floor(((Date.now() - started) / 1000) * rate), total);
  for (; sent < due; sent++) session.trap("1.3.6.1.4.1.318.0.268", varbinds, () => undefined);
  await new Promise((resolve) => setTimeout(resolve, 5));
}
// The last datagrams leave before the socket closes.
await new Promise((resolve) => setTimeout(resolve, 200));
session.close();
process.stdout.write(`${JSON.stringify({ sent })}\n`);
