/**
 * Hostile SNMP agents, counted at the agent: one that answers tooBig (to everything, or to any
 * GETBULK above a small size) gets a bounded number of requests per poll (at most
 * MAX_REQUESTS_PER_POLL, and the poll gives up after MAX_TOO_BIG_PER_POLL tooBig answers with a
 * clear error), never the ~100,000 of a walk whose repetitions could not shrink; two control rows
 * claiming one outlet are resolved to the first, with a warning naming both, and a write goes to
 * the first. Every input is tried against the project's agent (net-snmp's agent side, real UDP):
 * nothing but a PduError comes out, and no community is in a message.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isPduError } from "../../../src/pdu/errors.js";
import { SnmpDriver } from "../../../src/pdu/snmp/driver.js";
import { parsePoll, type WalkedVarbind } from "../../../src/pdu/snmp/parse.js";
import { APC_RPDU2 } from "../../../src/pdu/snmp/profiles/apc-rpdu2.js";
import { MAX_REQUESTS_PER_POLL, MAX_TOO_BIG_PER_POLL } from "../../../src/pdu/snmp/transport.js";
import { startSnmpSimulator, type SnmpSimulatorOptions } from "../../../src/simulator/snmp/agent.js";
import { SIM_PROFILES } from "../../../src/simulator/snmp/units.js";
import { snmpInstance } from "../../../testkit/snmpsim.js";

const COMMUNITY = "hostile-read-7f3a";
const WRITE = "hostile-write-9c1e";

/** A simulator whose received datagrams are counted, and a driver of it. */
async function rig(o: Omit<SnmpSimulatorOptions, "port" | "community" | "writeCommunity">, maxRows?: number) {
  let requests = 0;
  const sim = await startSnmpSimulator({
    ...o,
    port: 0,
    community: COMMUNITY,
    writeCommunity: WRITE,
    onRequest: () => requests++,
  });
  const driver = new SnmpDriver(
    snmpInstance(`hostile-${o.profile}`, sim.port, { Community: COMMUNITY, WriteCommunity: WRITE }, 2),
    maxRows === undefined ? {} : { maxRows },
  );
  return {
    sim,
    driver,
    /** Datagrams received since the last call. */
    take: () => {
      const n = requests;
      requests = 0;
      return n;
    },
    close: async () => {
      await driver.close();
      await sim.close();
    },
  };
}

/** What one input did: how many tried, crashed (anything but a PduError) and leaked (a community in a message). */
const tally = { tried: 0, crashed: 0, leaked: 0 };

function account(result: PromiseSettledResult<unknown>): void {
  tally.tried++;
  if (result.status === "fulfilled") return;
  const e: unknown = result.reason;
  if (!isPduError(e)) tally.crashed++;
  const text = e instanceof Error ? `${e.message} ${String(e.cause)}` : String(e);
  if (text.includes(COMMUNITY) || text.includes(WRITE)) tally.leaked++;
}

describe("an agent answering tooBig", () => {
  // Limits in varbinds per GETBULK answered; 0: tooBig to every GETBULK.
  const LIMITS = [0, 1, 2, 3, 4, 8, 16, 64];
  for (const profile of SIM_PROFILES) {
    for (const limit of LIMITS) {
      it(`${profile}, tooBig above ${limit} varbinds: bounded requests per poll, a clear error or every outlet`, async () => {
        const r = await rig({ profile, tooBigAbove: limit });
        try {
          for (let poll = 0; poll < 2; poll++) {
            const [result] = await Promise.allSettled([r.driver.poll(AbortSignal.timeout(30_000))]);
            assert.ok(result !== undefined);
            account(result);
            const sent = r.take();
            assert.ok(sent <= MAX_REQUESTS_PER_POLL, `${sent} requests in one poll`);
            // Only an agent answering tooBig to every GETBULK cannot be read at all.
            assert.equal(result.status === "rejected", limit === 0, String(result.status));
            if (result.status === "rejected") {
              const e: unknown = result.reason;
              assert.ok(isPduError(e) && e.kind === "ret-code", String(e));
              assert.match(e.message, /answered tooBig \d+ times in one poll/);
              assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${r.sim.port}`));
              // The identity GET, then at most the tooBig answers allowed and the one that stops it.
              if (poll === 0) assert.ok(sent <= MAX_TOO_BIG_PER_POLL + 2, `${sent} requests`);
            } else {
              assert.ok(limit >= 1, `read with a limit of ${limit}`);
              assert.equal(result.value.devices[0]?.outlets.length, 8);
            }
          }
        } finally {
          await r.close();
        }
      });
    }
  }

  it("a huge table read a few varbinds at a time stops at the request budget with a clear error", async () => {
    const r = await rig({ profile: "apc-rpdu2", hostile: "huge-tables", tooBigAbove: 3 });
    try {
      const [result] = await Promise.allSettled([r.driver.poll(AbortSignal.timeout(60_000))]);
      assert.ok(result !== undefined);
      account(result);
      const sent = r.take();
      assert.ok(sent <= MAX_REQUESTS_PER_POLL + 1, `${sent} requests`);
      assert.ok(sent >= MAX_REQUESTS_PER_POLL - 1, `${sent} requests`);
      const e: unknown = result.status === "rejected" ? result.reason : null;
      assert.ok(isPduError(e) && e.kind === "malformed", String(e));
      assert.match(e.message, new RegExp(`more than ${MAX_REQUESTS_PER_POLL} requests for one poll`));
      assert.match(e.message, /PDU hostile-apc-rpdu2/);
    } finally {
      await r.close();
    }
  });

  it(`tried: nothing crashed, no community leaked (${LIMITS.length * SIM_PROFILES.length * 2 + 1} polls)`, () => {
    assert.equal(tally.tried, LIMITS.length * SIM_PROFILES.length * 2 + 1);
    assert.equal(tally.crashed, 0);
    assert.equal(tally.leaked, 0);
  });
});

describe("two control rows claiming one outlet", () => {
  it("the first row is used, a warning names both, and a write goes to the first", async () => {
    const r = await rig({ profile: "apc-rpdu2", hostile: "duplicate-rows" });
    try {
      const snapshot = await r.driver.poll();
      const device = snapshot.devices[0];
      assert.equal(device?.outlets.length, 8);
      assert.deepEqual(
        snapshot.warnings?.map((w) => [w.path, w.problem]),
        [
          [
            "rPDU2OutletSwitchedControlEntry[9]",
            "rows 2 and 9 both claim number 2 of unit 1: row 2 is used, row 9 ignored",
          ],
        ],
      );
      await r.driver.controlOutlet({ deviceId: device?.id ?? "", index: 1, route: null }, "off");
      // The agent records its write phases; what matters is the row written: the first, never row 9.
      assert.deepEqual([...new Set(r.sim.sets.map((s) => s.oid))], ["1.3.6.1.4.1.318.1.1.26.9.2.4.1.5.2"]);
    } finally {
      await r.close();
    }
  });

  it("every table whose rows carry their number in a column: duplicates anywhere, the first wins, each named once", () => {
    const R2 = "1.3.6.1.4.1.318.1.1.26";
    // Per table: entry OID, Module and Number columns, a value column read by the profile.
    const tables = [
      { name: "rPDU2OutletSwitchedStatusEntry", entry: `${R2}.9.2.3.1`, module: 2, number: 4, value: 5 },
      { name: "rPDU2OutletSwitchedControlEntry", entry: `${R2}.9.2.4.1`, module: 2, number: 4, value: 5 },
      { name: "rPDU2OutletSwitchedConfigEntry", entry: `${R2}.9.2.1.1`, module: 2, number: 4, value: 5 },
      { name: "rPDU2OutletMeteredStatusEntry", entry: `${R2}.9.4.3.1`, module: 2, number: 4, value: 6 },
      { name: "rPDU2PhaseStatusEntry", entry: `${R2}.6.3.1`, module: 2, number: 3, value: 5 },
      { name: "rPDU2BankStatusEntry", entry: `${R2}.8.3.1`, module: 2, number: 3, value: 5 },
    ];
    let tried = 0;
    for (const t of tables) {
      for (const claimed of [1, 4]) {
        for (const copies of [1, 3]) {
          const rows: WalkedVarbind[] = [];
          const add = (index: number, number: number, value: number) => {
            rows.push({ oid: `${t.entry}.${t.module}.${index}`, type: "Integer", value: 1 });
            rows.push({ oid: `${t.entry}.${t.number}.${index}`, type: "Integer", value: number });
            rows.push({ oid: `${t.entry}.${t.value}.${index}`, type: "Integer", value });
          };
          for (let n = 1; n <= 4; n++) add(n, n, 2);
          for (let c = 0; c < copies; c++) add(5 + c, claimed, 1);
          const status = `${R2}.9.2.3.1`;
          const outlets: WalkedVarbind[] =
            t.entry === status
              ? []
              : [1, 2, 3, 4].flatMap((n) => [
                  { oid: `${status}.2.${n}`, type: "Integer" as const, value: 1 },
                  { oid: `${status}.4.${n}`, type: "Integer" as const, value: n },
                  { oid: `${status}.5.${n}`, type: "Integer" as const, value: 2 },
                ]);
          const { snapshot } = parsePoll(
            APC_RPDU2,
            {
              tables: new Map([
                [t.name, rows],
                ...(outlets.length > 0 ? ([["rPDU2OutletSwitchedStatusEntry", outlets]] as const) : []),
              ]),
              scalars: new Map(),
            },
            "dup",
            1,
            { manufacturer: "APC", groupModel: "Group" },
          );
          tried++;
          const warnings = snapshot.warnings ?? [];
          assert.equal(warnings.length, copies, JSON.stringify(warnings));
          warnings.forEach((w, c) => {
            assert.equal(w.path, `${t.name}[${5 + c}]`);
            assert.match(w.problem, new RegExp(`rows ${claimed} and ${5 + c} both claim number ${claimed}`));
          });
          // The first row's value is the one read (the duplicates hold 1: off, or 0.1 A).
          const device = snapshot.devices[0];
          if (t.name === "rPDU2OutletSwitchedStatusEntry")
            assert.equal(device?.outlets[claimed - 1]?.state, "on");
          assert.equal(device?.outlets.length, 4);
        }
      }
    }
    assert.equal(tried, 24);
  });
});
