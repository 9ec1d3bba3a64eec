/** The Geist envelope every answer comes in: what decodeEnvelope keeps, and what it refuses. */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decodeEnvelope } from "../../../src/pdu/geist/wire.js";
import { PduError } from "../../../src/pdu/errors.js";

const WHERE = "127.0.0.1:80 (GET /api)";
const body = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), "utf8");

describe("decodeEnvelope", () => {
  it("gives the answer's retCode, retMsg and data as sent, from a Buffer or a string", () => {
    const data = { dev: { x: { outlet: { "0": { state: "on" } } } } };
    const read = (answer: Buffer | string) => {
      const { retCode, retMsg, data } = decodeEnvelope(answer, WHERE);
      return { retCode, retMsg, data };
    };
    assert.deepEqual(read(body({ retCode: 0, retMsg: "ok", data })), { retCode: 0, retMsg: "ok", data });
    assert.deepEqual(read(JSON.stringify({ retCode: 3, retMsg: "busy", data })), {
      retCode: 3,
      retMsg: "busy",
      data,
    });
  });

  it("reads a retMsg that is missing or not a string as empty", () => {
    assert.equal(decodeEnvelope(body({ retCode: 0, data: {} }), WHERE).retMsg, "");
    assert.equal(decodeEnvelope(body({ retCode: 0, retMsg: 7, data: {} }), WHERE).retMsg, "");
    assert.equal(decodeEnvelope(body({ retCode: 0, retMsg: null, data: {} }), WHERE).retMsg, "");
  });

  it("refuses, as malformed and naming the request, what is not JSON, not an object or has no integer retCode", () => {
    for (const answer of [
      Buffer.from("<html>", "utf8"),
      body([1, 2]),
      body(null),
      body({ data: {} }),
      body({ retCode: "0", data: {} }),
      body({ retCode: 0.5, data: {} }),
    ]) {
      assert.throws(
        () => decodeEnvelope(answer, WHERE),
        (e: unknown) => e instanceof PduError && e.kind === "malformed" && e.message.includes(WHERE),
        answer.toString("utf8"),
      );
    }
  });
});
