/**
 * A small reader of recorded SNMP walks, for tests that work out what a unit reports from the
 * recording itself (never through the bridge's parser): snmpsim's `.snmprec` (`OID|tag|value`,
 * hex values as `4x`, variations such as `2:numeric|min=1,...,initial=2` or
 * `4:writecache|value=...`) and net-snmp's `snmpwalk -On` output (`.OID = TYPE: value`).
 *
 * A value is what the agent serves at first: a `numeric` variation's `initial`, a `writecache`'s
 * `value`. Strings are bytes (latin1 in `text`, decoded as UTF-8 in `utf8`).
 */
import { readFile } from "node:fs/promises";

export type WalkType = "Integer" | "OctetString" | "Gauge" | "Counter" | "ObjectId" | "IpAddress" | "Other";

export interface WalkValue {
  readonly type: WalkType;
  /** The number of an INTEGER, Gauge32, Counter32 (else NaN). */
  readonly number: number;
  /** The bytes of an OCTET STRING (else empty). */
  readonly bytes: Buffer;
  /** Whether snmpsim varies the value (a `numeric` variation): it is not what a later GET answers. */
  readonly varies: boolean;
}

/** snmprec tags (ASN.1): 2 INTEGER, 4 OCTET STRING, 6 OID, 64 IpAddress, 65 Counter32, 66 Gauge32. */
const TAGS: Readonly<Record<string, WalkType>> = {
  "2": "Integer",
  "4": "OctetString",
  "6": "ObjectId",
  "64": "IpAddress",
  "65": "Counter",
  "66": "Gauge",
};

/** snmpwalk's type names. */
const NAMES: Readonly<Record<string, WalkType>> = {
  INTEGER: "Integer",
  STRING: "OctetString",
  "Hex-STRING": "OctetString",
  OID: "ObjectId",
  IpAddress: "IpAddress",
  Counter32: "Counter",
  Gauge32: "Gauge",
};

function value(type: WalkType, number: number, bytes: Buffer, varies = false): WalkValue {
  return { type, number, bytes, varies };
}

function snmprecLine(line: string): [string, WalkValue] | null {
  const [oid, tagField, ...rest] = line.split("|");
  if (oid === undefined || tagField === undefined || oid === "") return null;
  let text = rest.join("|");
  const [tag = "", variation] = tagField.split(":");
  const hex = tag.endsWith("x");
  const type = TAGS[hex ? tag.slice(0, -1) : tag] ?? "Other";
  let varies = false;
  if (variation === "numeric") {
    varies = true;
    text = /(?:^|,)initial=(-?\d+)/.exec(text)?.[1] ?? "";
  } else if (variation !== undefined) {
    const m = /(?:^|,)(hex)?value=(.*)$/.exec(text);
    text = m?.[2] ?? "";
    if (m?.[1] === "hex") return [oid, value(type, NaN, Buffer.from(text, "hex"), varies)];
  }
  if (type === "OctetString" || type === "IpAddress" || type === "ObjectId") {
    return [oid, value(type, NaN, hex ? Buffer.from(text, "hex") : Buffer.from(text, "latin1"))];
  }
  return [oid, value(type, Number(text), Buffer.alloc(0), varies)];
}

/** One `.OID = TYPE: value` record of snmpwalk's output (its continuation lines joined). */
function snmpwalkRecord(record: string): [string, WalkValue] | null {
  const m = /^\.?([0-9.]+) = (?:([A-Za-z0-9-]+): )?([\s\S]*)$/.exec(record);
  if (m === null) return null;
  const [, oid = "", name = "", raw = ""] = m;
  const type = NAMES[name] ?? "Other";
  if (name === "Hex-STRING") return [oid, value(type, NaN, Buffer.from(raw.replace(/\s+/g, ""), "hex"))];
  if (type === "OctetString") {
    const quoted = /^"([\s\S]*)"$/.exec(raw);
    return [oid, value(type, NaN, Buffer.from(quoted?.[1] ?? raw, "utf8"))];
  }
  if (type === "ObjectId" || type === "IpAddress")
    return [oid, value(type, NaN, Buffer.from(raw.trim().replace(/^\./, "")))];
  const n = /-?\d+/.exec(raw)?.[0];
  return [oid, value(type, n === undefined ? NaN : Number(n), Buffer.alloc(0))];
}

/** A recorded walk: values by OID (without a leading dot), in the file's order. */
export class Walk {
  readonly #values: ReadonlyMap<string, WalkValue>;

  constructor(values: ReadonlyMap<string, WalkValue>) {
    this.#values = values;
  }

  /** Reads an `.snmprec` or `.snmpwalk` file. */
  static async read(path: string): Promise<Walk> {
    const text = await readFile(path, "utf8");
    const values = new Map<string, WalkValue>();
    if (path.endsWith(".snmprec")) {
      for (const line of text.split("\n")) {
        const entry = snmprecLine(line.replace(/\r$/, ""));
        if (entry !== null) values.set(entry[0], entry[1]);
      }
    } else {
      let record = "";
      const flush = () => {
        const entry = record === "" ? null : snmpwalkRecord(record);
        if (entry !== null) values.set(entry[0], entry[1]);
      };
      for (const line of text.split("\n")) {
        if (line.startsWith(".")) {
          flush();
          record = line;
        } else if (record !== "") record += `\n${line}`;
      }
      flush();
    }
    return new Walk(values);
  }

  get(oid: string): WalkValue | undefined {
    return this.#values.get(oid);
  }

  /** The number at `oid`, or undefined when the walk has none there. */
  int(oid: string): number | undefined {
    const v = this.#values.get(oid);
    return v === undefined || Number.isNaN(v.number) ? undefined : v.number;
  }

  /** The string at `oid` decoded as UTF-8 and trimmed, or undefined. */
  text(oid: string): string | undefined {
    const v = this.#values.get(oid);
    return v === undefined || v.type !== "OctetString" ? undefined : v.bytes.toString("utf8").trim();
  }

  /**
   * The rows of a column: `[index, value]` for every OID `<column>.<index>`, the index as its
   * sub-identifiers, in the file's order.
   */
  column(column: string): [number[], WalkValue][] {
    const prefix = `${column}.`;
    const out: [number[], WalkValue][] = [];
    for (const [oid, v] of this.#values) {
      if (oid.startsWith(prefix)) out.push([oid.slice(prefix.length).split(".").map(Number), v]);
    }
    return out;
  }
}
