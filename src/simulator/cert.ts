/**
 * One self-signed certificate per process for every HTTPS simulator (CN localhost, SANs localhost,
 * 127.0.0.1 and ::1), generated on first use, so hundreds of simulators share one.
 */

import { generate } from "selfsigned";

export interface TlsMaterial {
  /** PEM private key. */
  readonly key: string;
  /** PEM certificate; also what a client trusts as its CA. */
  readonly cert: string;
}

const DAY_MS = 86_400_000;
let pending: Promise<TlsMaterial> | null = null;

export function selfSignedCertificate(): Promise<TlsMaterial> {
  pending ??= generate([{ name: "commonName", value: "localhost" }], {
    keyType: "ec",
    algorithm: "sha256",
    notBeforeDate: new Date(Date.now() - DAY_MS),
    notAfterDate: new Date(Date.now() + 825 * DAY_MS),
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: "localhost" },
          { type: 7, ip: "127.0.0.1" },
          { type: 7, ip: "::1" },
        ],
      },
    ],
  }).then(
    (pems) => ({ key: pems.private, cert: pems.cert }),
    (err: unknown) => {
      pending = null; // let a later call try again
      throw err;
    },
  );
  return pending;
}
