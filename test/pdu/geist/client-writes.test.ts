/**
 * Writes that must never run twice, and write URLs that normalisation cannot change, against a
 * hostile PDU over real HTTP (testkit/hostile-pdu.ts).
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { GeistClient, type ClientInstance } from "../../../src/pdu/geist/client.js";
import { isPduError } from "../../../src/pdu/errors.js";
import { HostilePdu } from "../../../testkit/hostile-pdu.js";

function instanceFor(pdu: HostilePdu): ClientInstance {
  return {
    id: "hostile",
    Connection: {
      Host: pdu.host,
      Port: pdu.port,
      Scheme: "http",
      Timeout: 5,
      ValidateCertificate: false,
      CaFile: null,
    },
    Credentials: { Username: "admin", Password: "admin" },
  };
}

describe("writes against a PDU that closes the socket after reading the body", () => {
  let pdu: HostilePdu;
  let client: GeistClient;
  const target = { deviceId: "A0AE260C851900C3", index: 1, route: null };

  before(async () => {
    pdu = await HostilePdu.start();
    client = new GeistClient(instanceFor(pdu));
  });
  after(async () => {
    await client.close();
    await pdu.close();
  });
  beforeEach(() => {
    pdu.writes = "close-after-body";
    pdu.requests.length = 0;
  });

  for (const [name, write] of [
    ["reboot", () => client.controlOutlet(target, "reboot")],
    ["resetStats", () => client.resetOutletEnergy(target)],
  ] as const) {
    it(`${name}: sent exactly once, and the error says the outcome is unknown`, async () => {
      const error: unknown = await write().then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(isPduError(error), String(error));
      assert.equal(error.kind, "outcome-unknown", error.message);
      assert.match(error.message, /may have reached the PDU, so it was not sent again/);
      assert.equal(pdu.writesSeen().length, 1, "exactly one POST reached the PDU");
    });
  }

  it("on/off (idempotent): retried once on a fresh connection, then a plain failure", async () => {
    const error: unknown = await client.controlOutlet(target, "off").then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(isPduError(error), String(error));
    assert.equal(error.kind, "unreachable", error.message);
    assert.equal(pdu.writesSeen().length, 2, "sent, then retried once");
  });

  it("a reboot that is answered is done once, over its own connection", async () => {
    pdu.writes = "ok";
    await client.controlOutlet(target, "reboot");
    assert.equal(pdu.writesSeen().length, 1);
    assert.deepEqual(pdu.writesSeen()[0]?.data, { action: "reboot", delay: false });
  });
});

describe("write URLs from PDU-supplied device ids", () => {
  let pdu: HostilePdu;
  let client: GeistClient;

  before(async () => {
    pdu = await HostilePdu.start();
    client = new GeistClient(instanceFor(pdu));
  });
  after(async () => {
    await client.close();
    await pdu.close();
  });

  it("`.`, `..` and other unsafe ids never become a URL: refused before anything is sent", async () => {
    for (const deviceId of [".", "..", "", "a/b", "x".repeat(129), "a\u0001", "\ud800"]) {
      await assert.rejects(
        client.controlOutlet({ deviceId, index: 0, route: null }, "off"),
        /device id .* cannot be part of a URL/,
        JSON.stringify(deviceId),
      );
    }
    assert.deepEqual(pdu.requests, [], "not even a login");
  });

  it("other ids are percent-encoded into exactly one segment", async () => {
    await client.controlOutlet({ deviceId: "a b?c%d.e", index: 3, route: null }, "on");
    assert.deepEqual(
      pdu.writesSeen().map((w) => w.url),
      ["/api/dev/a%20b%3Fc%25d.e/outlet/3"],
    );
  });
});
