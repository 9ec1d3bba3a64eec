/**
 * The BER writer net-snmp makes for every request it sends (asn1-ber's `Writer`), built without
 * its constructor's costs: asn1-ber merges its default options into a new object through property
 * descriptors and allocates a zero-filled 1 KiB buffer of its own (an off-heap allocation V8 tracks
 * for the collector) for each message, although a poll's request needs a few dozen bytes. The
 * writer {@link pooledBerWriters} installs takes its 1 KiB from Node's shared buffer pool and
 * zeroes it, and shares one frozen copy of the default options; a writer asked for other options is
 * asn1-ber's own. Everything else (the prototype, its methods and how the buffer grows) is
 * asn1-ber's, so every message is written byte for byte as before.
 */
import { netSnmpBer, type BerWriter, type BerWriterConstructor } from "./ber-oids.js";

/** asn1-ber's default buffer size and growth factor. */
const DEFAULT_OPTIONS = Object.freeze({ size: 1024, growthFactor: 8 });

/** The fields asn1-ber's constructor sets (its own names). */
interface WriterFields extends BerWriter {
  _size: number;
  _options: object;
  _seq: number[];
}

/** A writer constructor with `Original`'s prototype that builds a default writer on a pooled buffer. */
export function pooledWriter(Original: BerWriterConstructor): BerWriterConstructor {
  function Writer(this: WriterFields, options?: object): void {
    if (options !== undefined) {
      (Original as unknown as (this: WriterFields, options: object) => void).call(this, options);
      return;
    }
    // Smaller than half the pool's size, so a slice of the shared pool, never a buffer of its own.
    this._buf = Buffer.allocUnsafe(DEFAULT_OPTIONS.size).fill(0);
    this._size = DEFAULT_OPTIONS.size;
    this._offset = 0;
    this._options = DEFAULT_OPTIONS;
    this._seq = [];
  }
  Writer.prototype = Original.prototype;
  return Writer as unknown as BerWriterConstructor;
}

let installed = false;

/** Installs {@link pooledWriter} as net-snmp's asn1-ber `Writer`, once per process. */
export function pooledBerWriters(): void {
  if (installed) return;
  installed = true;
  const ber = netSnmpBer();
  ber.Writer = pooledWriter(ber.Writer);
}
