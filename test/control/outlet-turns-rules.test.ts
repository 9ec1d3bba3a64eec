/**
 * The outlets' turns follow the rules they are given (the command table's `supersedesWaiting` and
 * `oncePerRebootDelay`, the settings write's), not the names of the commands: a made-up command
 * with a rule is treated as the rule says, and the table's rows give on/off, reboot and resetStats
 * the discipline docs/control.md describes.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { command, COMMANDS } from "../../src/control/commands.js";
import { OutletTurns, type Turn, type TurnRules } from "../../src/control/outlet-turns.js";
import { SETTINGS_TURN } from "../../src/control/settings.js";

const rules = (name: string, supersedesWaiting: boolean, oncePerRebootDelay: boolean): TurnRules => ({
  name,
  supersedesWaiting,
  oncePerRebootDelay,
  switchesRelay: false,
});

function row(name: string): TurnRules {
  const found = command(name);
  assert.ok(found !== undefined, name);
  return found;
}

function granted(turn: Turn): (sent: boolean) => void {
  assert.ok(turn.ok, JSON.stringify(turn));
  if (!turn.ok) throw new Error("unreachable");
  return turn.release;
}

describe("the outlets' turns read their rules from the rows", () => {
  it("gives on and off the supersede rule and reboot the reboot-delay rule, from the table", () => {
    const byRule = COMMANDS.map((c) => [c.name, c.supersedesWaiting, c.oncePerRebootDelay]);
    assert.deepEqual(byRule, [
      ["on", true, false],
      ["off", true, false],
      ["reboot", false, true],
      ["resetStats", false, false],
    ]);
    assert.equal(SETTINGS_TURN.supersedesWaiting, false);
    assert.equal(SETTINGS_TURN.oncePerRebootDelay, false);
  });

  it("lets a made-up command that supersedes take a waiting write's place", async () => {
    const turns = new OutletTurns({ waitLimitMs: 60_000 });
    const release = granted(await turns.acquire("k", row("reboot"), null));
    const waiting = turns.acquire("k", SETTINGS_TURN, null);
    const newer = turns.acquire("k", rules("blink", true, false), null);
    assert.deepEqual(await waiting, { ok: false, kind: "superseded" });
    release(false);
    granted(await newer)(false);
    assert.equal(turns.size, 0);
  });

  it("refuses a made-up command that does not supersede while another waits, naming both", async () => {
    const turns = new OutletTurns({ waitLimitMs: 60_000 });
    const release = granted(await turns.acquire("k", row("on"), null));
    const waiting = turns.acquire("k", row("resetStats"), null);
    const refused = await turns.acquire("k", rules("blink", false, false), null);
    assert.equal(refused.ok, false);
    assert.ok(!refused.ok && refused.kind === "busy");
    assert.match(refused.reason, /a resetStats of this outlet is already waiting behind a on/);
    release(false);
    granted(await waiting)(false);
    turns.stop();
  });

  it("holds a made-up command with the reboot-delay rule off for the delay once it was sent", async () => {
    let now = 1_000_000;
    const turns = new OutletTurns({ now: () => now });
    const blink = rules("blink", false, true);
    const running = granted(await turns.acquire("k", blink, 3));
    const during = await turns.acquire("k", blink, 3);
    assert.ok(!during.ok && during.kind === "busy");
    assert.match(during.reason, /a blink of this outlet is running/);
    running(true);
    now += 2_000;
    const held = await turns.acquire("k", blink, 3);
    assert.ok(!held.ok && held.kind === "busy", "within its 3 s delay");
    // Another rule on the same outlet is not held.
    granted(await turns.acquire("k", row("on"), 3))(false);
    now += 1_000;
    granted(await turns.acquire("k", blink, 3))(false);
    // Not sent: no hold.
    granted(await turns.acquire("other", blink, 3))(false);
    granted(await turns.acquire("other", blink, 3))(false);
    turns.stop();
  });
});
