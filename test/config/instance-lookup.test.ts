import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findInstance } from "../../src/config/instance-lookup.js";

describe("findInstance", () => {
  const instances = [{ id: "rack-A" }, { id: "Rack-b" }, { id: "rack-b2" }];

  it("takes the exact id", () => {
    assert.equal(findInstance(instances, "Rack-b"), instances[1]);
  });

  it("else the id equal ignoring case", () => {
    assert.equal(findInstance(instances, "RACK-a"), instances[0]);
    assert.equal(findInstance(instances, "rack-B"), instances[1]);
  });

  it("prefers the exact id over an earlier one equal ignoring case", () => {
    const both = [{ id: "pdu" }, { id: "PDU" }];
    assert.equal(findInstance(both, "PDU"), both[1]);
  });

  it("finds nothing for an unknown id or a prefix", () => {
    assert.equal(findInstance(instances, "rack"), undefined);
    assert.equal(findInstance(instances, ""), undefined);
    assert.equal(findInstance([], "rack-A"), undefined);
  });

  it("returns the item itself, whatever else it holds", () => {
    const statuses = instances.map((i) => ({ ...i, consecutiveFailures: 0 }));
    assert.equal(findInstance(statuses, "RACK-B2"), statuses[2]);
  });
});
