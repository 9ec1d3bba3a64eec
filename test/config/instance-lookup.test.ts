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

  it("reads any iterable, a store's statuses or a map's values", () => {
    const byId = new Map(instances.map((i) => [i.id, i]));
    assert.equal(findInstance(byId.values(), "RACK-B2"), instances[2]);
  });
});
