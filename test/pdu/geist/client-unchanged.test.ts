/**
 * Polls whose answer is byte for byte the previous one: the client hands back the previous snapshot
 * restamped (same parts, so the store and the publisher skip their work), and anything else (a
 * changed, malformed or refused answer) is parsed or fails as before, so a PDU can at most make its
 * own snapshot stay what it last answered.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { GeistClient } from "../../../src/pdu/geist/client.js";
import { ParseError, PduError } from "../../../src/pdu/errors.js";
import { findDevice, sameContent, type Snapshot } from "../../../src/pdu/model.js";
import { startSimulator, type Simulator } from "../../../src/simulator/index.js";
import { HostilePdu } from "../../../testkit/hostile-pdu.js";
import { wireApi } from "../../../testkit/fixtures/wire.js";

function clientOf(host: string, port: number, scheme: "http" | "https" = "http"): GeistClient {
  return new GeistClient({
    id: "pdu1",
    Connection: {
      Host: host,
      Port: port,
      Scheme: scheme,
      Timeout: 10,
      ValidateCertificate: false,
      CaFile: null,
    },
    Credentials: { Username: "admin", Password: "admin" },
  });
}

/** The snapshot without its time, for comparing content built separately. */
const content = (s: Snapshot) => ({ ...s, timestamp: 0 });

describe("GeistClient: an answer identical to the previous one", () => {
  let pdu: HostilePdu;
  let client: GeistClient;
  // The spec's example answer (no timestamps in it, like every real Geist answer).
  const answer = JSON.stringify(wireApi());

  before(async () => {
    pdu = await HostilePdu.start();
    pdu.rawTree = answer;
    client = clientOf(pdu.host, pdu.port);
  });
  after(async () => {
    await client.close();
    await pdu.close();
  });

  it("comes back as the previous snapshot restamped; a changed one is parsed", async () => {
    const first = await client.poll();
    const second = await client.poll();
    assert.ok(sameContent(first, second));
    assert.notEqual(second, first, "a snapshot of its own, with this poll's time");
    assert.ok(second.timestamp >= first.timestamp);
    assert.ok(Object.isFrozen(second));

    pdu.rawTree = answer.replace('"Rack 12 PDU"', '"Rack 13 PDU"');
    const third = await client.poll();
    assert.equal(sameContent(second, third), false);
    assert.equal(third.system.label, "Rack 13 PDU");
    assert.ok(sameContent(third, await client.poll()));
  });

  it("parses an answer of another length without hashing it, and skips it again once repeated", async () => {
    pdu.rawTree = answer;
    await client.poll();
    pdu.rawTree = answer.replace('"Rack 12 PDU"', '"Rack 12 PDU, row 4"');
    const changed = await client.poll();
    assert.equal(changed.system.label, "Rack 12 PDU, row 4");
    // Not hashed when it came: the first repeat is parsed (the same content), the next one is not.
    const repeat = await client.poll();
    assert.deepEqual(content(repeat), content(changed));
    assert.ok(sameContent(repeat, await client.poll()));
  });

  it("parses again after a malformed or unparsable answer, never reusing an older snapshot", async () => {
    pdu.rawTree = answer;
    const good = await client.poll();
    pdu.rawTree = answer.slice(0, 100);
    await assert.rejects(client.poll(), (e) => e instanceof PduError && e.kind === "malformed");
    pdu.rawTree = "{}";
    await assert.rejects(client.poll(), (e) => e instanceof ParseError);
    pdu.rawTree = answer;
    const after = await client.poll();
    assert.equal(sameContent(good, after), false, "parsed anew");
    assert.deepEqual(content(after), content(good));
  });
});

describe("GeistClient against a frozen simulator", () => {
  let sim: Simulator;
  let client: GeistClient;
  before(async () => {
    sim = await startSimulator({ outlets: 4, seed: 7, frozen: true });
    client = clientOf(sim.host, sim.port, sim.scheme);
  });
  after(async () => {
    await client.close();
    await sim.close();
  });

  it("polls the same content until something on the PDU changes", async () => {
    const first = await client.poll();
    const second = await client.poll();
    assert.ok(sameContent(first, second));
    const deviceId = first.devices[0]!.id;
    await client.setLabel({ kind: "device", deviceId, route: null }, "Renamed rack");
    const third = await client.poll();
    assert.equal(sameContent(second, third), false);
    assert.equal(findDevice(third, deviceId)?.label, "Renamed rack");
  });
});
