/**
 * Fault: the PDU's login token expires between polls and writes, and the PDU's password is changed
 * under the running bridge (the real CLI). An expired token costs exactly one extra login and the
 * write succeeds; a changed password costs exactly one login attempt per write and the write fails
 * with a 502 that says why, without the password anywhere (response, log).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RecordedRequest } from "../../src/simulator/index.js";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { BridgeProcess, pollCount, until } from "../../testkit/faults-harness.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { failOnUnhandled } from "../../testkit/no-unhandled.js";

failOnUnhandled();

const USER = "operator";
const PASSWORD_EXPIRY = "Tok3n-Expiry-Pass";
const PASSWORD_OLD = "0ld-Pass-Before-Change";
const PASSWORD_NEW = "N3w-Pass-After-Change";

/** The POSTs recorded after `mark`, as their `cmd` (login, control, ...). */
const postsSince = (sim: Simulator, mark: number): (string | null)[] =>
  sim.requests
    .slice(mark)
    .filter((r: RecordedRequest) => r.method === "POST")
    .map((r) => r.cmd);

describe("PDU token expiry and password change", () => {
  let broker: Mosquitto;
  let expiring: Simulator;
  let changed: Simulator;
  let bridge: BridgeProcess;
  let expiringDevice: string;
  let changedDevice: string;

  before(async () => {
    broker = await Mosquitto.start();
    expiring = await startSimulator({ outlets: 4, seed: 31, users: { [USER]: PASSWORD_EXPIRY } });
    changed = await startSimulator({ outlets: 4, seed: 32, users: { [USER]: PASSWORD_OLD } });
    expiringDevice = expiring.deviceIds()[0]!;
    changedDevice = changed.deviceIds()[0]!;
    bridge = await BridgeProcess.start(
      {
        broker,
        parentTopic: "faults-auth",
        pdus: [
          { id: "expiring", sim: expiring, actionsEnabled: true, username: USER, password: PASSWORD_EXPIRY },
          { id: "changed", sim: changed, actionsEnabled: true, username: USER, password: PASSWORD_OLD },
        ],
      },
      "bridge (auth faults)",
    );
    await bridge.waitPolled(["expiring", "changed"]);
  });

  after(async () => {
    await bridge?.close();
    await expiring?.close();
    await changed?.close();
    await broker?.close();
  });

  it("re-logs in once after the token expired between polls and writes, and the write succeeds", async () => {
    const first = await bridge.control("expiring", expiringDevice, 0, "off");
    assert.equal(first.status, 200, first.text);
    assert.equal(
      expiring.requests.filter((r) => r.cmd === "login").length,
      1,
      "one login: the one at start, whose token the first write uses",
    );

    expiring.expireTokens();
    // A poll goes by between the expiry and the next write (polls need no token).
    const polls = pollCount(expiring);
    await until(() => pollCount(expiring) > polls, "a poll after the expiry");

    const mark = expiring.requests.length;
    const res = await bridge.control("expiring", expiringDevice, 1, "off");
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      postsSince(expiring, mark),
      ["control", "login", "control"],
      "the rejected write, one login, the write again",
    );
    assert.equal(expiring.outlet(expiringDevice, 1).state, "off");
    assert.equal(expiring.requests.filter((r) => r.cmd === "login").length, 2, "one extra login in all");
  });

  it("after a password change, re-logs in once, then fails with a 502 that says why, no password in it", async (t) => {
    const first = await bridge.control("changed", changedDevice, 0, "off");
    assert.equal(first.status, 200, first.text);

    // The operator changes the password on the unit; its sessions end with it.
    changed.setPassword(USER, PASSWORD_NEW);
    changed.expireTokens();

    for (const attempt of [1, 2]) {
      const mark = changed.requests.length;
      const res = await bridge.control("changed", changedDevice, 1, "off");
      assert.equal(res.status, 502, res.text);
      assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
      const body = JSON.parse(res.text) as { status: number; title: string; detail: string };
      assert.equal(body.status, 502);
      if (attempt === 1) t.diagnostic(`502 detail: ${body.detail}`);
      assert.match(body.detail, /login to PDU .* failed: wrong password/);
      assert.match(body.detail, new RegExp(`127\\.0\\.0\\.1:${changed.port}`), "names the PDU");
      for (const secret of [PASSWORD_OLD, PASSWORD_NEW]) {
        assert.ok(!res.text.includes(secret), "the password is not in the response");
      }
      // First attempt: the cached token is rejected, one login fails. Later attempts have no token
      // left, so they go straight to one login, which fails: never a loop, never a lock-out storm.
      assert.deepEqual(
        postsSince(changed, mark),
        attempt === 1 ? ["control", "login"] : ["login"],
        `attempt ${attempt}: exactly one login, no retry loop`,
      );
      assert.equal(changed.outlet(changedDevice, 1).state, "on", "nothing was switched");
    }

    // Polls go on (they need no login) and the instance stays healthy.
    const health = await bridge.instanceHealth("changed");
    assert.equal(health.lastError, null);
  });

  it("never writes a password to the bridge's output", () => {
    const output = bridge.child.output;
    assert.ok(output.includes("pdu-bridge started"));
    for (const secret of [PASSWORD_EXPIRY, PASSWORD_OLD, PASSWORD_NEW]) {
      assert.ok(!output.includes(secret), `a password appears in the bridge's output`);
    }
  });
});
