/**
 * `Outlet.feedsFrom` from the drivers, where the PDU says which entity an outlet draws through:
 * Geist's `parentBreaker` (else `parent`, else `parentPhase`), the APC rPDU2's outlet bank, the
 * Raritan PX2's outletPowerSource (a RowPointer to an overcurrent protector or an inlet), the
 * Sentry4's st4OutletPhaseID. Read over real sockets: the Geist simulator, the SNMP simulator and
 * Debian's snmpsimd serving the recordings. What the PDU sends is untrusted: a key naming no entity
 * the device reports, a pointer into another unit or table, a value of the wrong type or an
 * over-long key gives no `feedsFrom`, never a wrong one.
 */
import assert from "node:assert/strict";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PDU_BOUNDS, SnapshotBounds } from "../../src/pdu/bounds.js";
import { createDriver } from "../../src/pdu/drivers.js";
import { parseApiTree } from "../../src/pdu/geist/parse.js";
import type { Snapshot } from "../../src/pdu/model.js";
import { SnmpDriver } from "../../src/pdu/snmp/driver.js";
import { startSimulator } from "../../src/simulator/index.js";
import { startSnmpSimulator } from "../../src/simulator/snmp/agent.js";
import { singleUnitTree } from "../../testkit/fixtures/geist-trees.js";
import { geistInstance } from "../../testkit/load-fleet.js";
import { recordingsMissing, SHARED_RECORDINGS } from "../../testkit/snmp-recordings.js";
import { RECORDINGS, snmpInstance, startSnmpsim, type Snmpsim } from "../../testkit/snmpsim.js";
import { waitFor } from "../../testkit/wait.js";

type Json = Record<string, unknown>;

/** Each outlet's `feedsFrom` by index ("-" where absent), of the first device. */
const feeds = (s: Snapshot): string[] => (s.devices[0]?.outlets ?? []).map((o) => o.feedsFrom ?? "-");

const halves = (n: number, a: string, b: string): string[] =>
  Array.from({ length: n }, (_, i) => (i < Math.ceil(n / 2) ? a : b));

describe("feedsFrom: Geist", () => {
  it("reads parentBreaker, else parent, else parentPhase, only where the device has that entity", () => {
    const tree = singleUnitTree();
    const outlets = ((tree.dev as Json).D1 as Json).outlet as Record<string, Json>;
    Object.assign(outlets["0"]!, { parentBreaker: "breaker2", parent: "phase0", parentPhase: "phase0" });
    Object.assign(outlets["4"]!, { parentBreaker: "breaker9", parent: "phase0" });
    Object.assign(outlets["5"]!, { parentBreaker: 2, parentPhase: "phase0" });
    Object.assign(outlets["6"]!, { parentBreaker: "nothing", parent: "", parentPhase: null });
    Object.assign(outlets["7"]!, { parent: "breaker10" });
    const s = parseApiTree(tree, "t", 1);
    const d = s.devices.find((x) => x.id === "D1")!;
    const by = (i: number) => d.outlets.find((o) => o.index === i)?.feedsFrom ?? "-";
    assert.deepEqual([0, 4, 5, 6, 7, 8].map(by), ["breaker2", "phase0", "phase0", "-", "breaker10", "-"]);
  });

  it("fills it from the simulator over HTTP: the first half of the outlets on breaker0, the rest on breaker1", async () => {
    const sim = await startSimulator({ outlets: 10, frozen: true });
    const driver = createDriver(geistInstance("g", sim.port, 2));
    try {
      assert.deepEqual(feeds(await driver.poll()), halves(10, "breaker0", "breaker1"));
    } finally {
      await driver.close();
      await sim.close();
    }
  });

  it("leaves out a key over the id bound with a warning, as the entity it names is left out", () => {
    const key = "b".repeat(PDU_BOUNDS.idChars + 1);
    const tree = singleUnitTree();
    const dev = (tree.dev as Json).D1 as Json;
    (dev.entity as Json)[key] = { name: "Long", label: "" };
    Object.assign((dev.outlet as Record<string, Json>)["0"]!, { parentBreaker: key });
    const parsed = parseApiTree(tree, "t", 1);
    assert.equal(parsed.devices.find((x) => x.id === "D1")?.outlets[0]?.feedsFrom, key);
    const s = new SnapshotBounds().apply(parsed);
    const d = s.devices.find((x) => x.id === "D1")!;
    assert.equal(d.outlets[0]?.feedsFrom, undefined);
    assert.ok(d.entities.every((e) => e.key !== key));
    assert.ok(
      (s.warnings ?? []).some((w) => w.path.endsWith(".feedsFrom")),
      JSON.stringify(s.warnings),
    );
  });
});

describe("feedsFrom: the SNMP simulator's units", () => {
  const cases = [
    { profile: "apc-rpdu2", want: halves(24, "bank0", "bank1") },
    { profile: "raritan-px2", want: halves(24, "breaker0", "breaker1") },
    { profile: "servertech-sentry4", want: Array.from({ length: 24 }, (_, i) => `phase${i % 3}`) },
  ] as const;
  for (const c of cases) {
    it(`${c.profile}: every outlet's entity, as the unit's tables say`, async () => {
      const sim = await startSnmpSimulator({ profile: c.profile, outlets: 24, frozen: true });
      const driver = new SnmpDriver(snmpInstance("s", sim.port, { Community: sim.community }));
      try {
        const s = await driver.poll();
        assert.deepEqual(feeds(s), c.want);
        const keys = new Set(s.devices[0]!.entities.map((e) => e.key));
        assert.ok(
          c.want.every((k) => keys.has(k)),
          "each names an entity the device reports",
        );
        // The later polls keep them (the APC unit's properties tables are walked by the first only).
        sim.unit.switch(1, "off");
        const next = await waitFor(async () => {
          const n = await driver.poll();
          return n.devices[0]?.outlets[0]?.state === "off" && n;
        }, "a poll after a change");
        assert.deepEqual(feeds(next), c.want);
      } finally {
        await driver.close();
        await sim.close();
      }
    });
  }
});

/** A recording with some lines' values replaced (`oid → "tag|value"`), written into `dir`. */
async function patched(dir: string, profile: string, edits: Readonly<Record<string, string>>): Promise<void> {
  const text = await readFile(join(RECORDINGS, `${profile}.snmprec`), "utf8");
  const seen = new Set<string>();
  const lines = text.split("\n").map((line) => {
    const oid = line.split("|")[0]!;
    const edit = edits[oid];
    if (edit === undefined) return line;
    seen.add(oid);
    return `${oid}|${edit}`;
  });
  assert.deepEqual(
    Object.keys(edits).filter((o) => !seen.has(o)),
    [],
    `${profile}: every edited OID is recorded`,
  );
  await writeFile(join(dir, `${profile}.snmprec`), lines.join("\n"));
  await chmod(join(dir, `${profile}.snmprec`), 0o644);
}

const R2 = "1.3.6.1.4.1.318.1.1.26";
const P2 = "1.3.6.1.4.1.13742.6";
const S4 = "1.3.6.1.4.1.1718.4.1";
const OCP_LABEL = `${P2}.3.4.3.1.2`;

describe("feedsFrom: snmpsimd serving the recordings", () => {
  let agent: Snmpsim;
  let hostile: Snmpsim;
  let dir: string;
  before(async () => {
    agent = await startSnmpsim({ only: ["apc-rpdu2", "raritan-px2", "servertech-sentry4"] });
    dir = await mkdtemp(join(tmpdir(), "feeds-from-"));
    await chmod(dir, 0o755);
    await patched(dir, "apc-rpdu2", {
      [`${R2}.9.2.2.1.6.1`]: "2|9", // a bank the unit does not report, in both properties tables
      [`${R2}.9.4.2.1.7.1`]: "2|9",
      [`${R2}.9.2.2.1.6.2`]: "2|9", // the switched table names none, the metered one bank 2
      [`${R2}.9.4.2.1.7.2`]: "2|2",
      [`${R2}.9.2.2.1.6.3`]: "2|0", // bank 0: no bank
      [`${R2}.9.4.2.1.7.3`]: "2|0",
    });
    await patched(dir, "raritan-px2", {
      [`${P2}.3.5.3.1.33.1.1`]: `6|${OCP_LABEL}.2.1`, // another PDU's protector
      [`${P2}.3.5.3.1.33.1.2`]: "6|1.3.6.1.2.1.1.5.0", // not an entity's row
      [`${P2}.3.5.3.1.33.1.3`]: `6|${OCP_LABEL}.1.9`, // a protector the unit does not report
      [`${P2}.3.5.3.1.33.1.4`]: `6|${OCP_LABEL}.1.1.5`, // one index too many
      [`${P2}.3.5.3.1.33.1.5`]: `4|${OCP_LABEL}.1.2`, // a string where the MIB has an OID
      [`${P2}.3.5.3.1.33.1.6`]: `6|${P2}.3.3.3.1.2.1.1`, // the inlet (inletLabel)
    });
    await patched(dir, "servertech-sentry4", {
      [`${S4}.8.2.1.30.1.1.1`]: "4|ZZZ9", // no phase has this ID
      [`${S4}.8.2.1.30.1.1.2`]: "4|",
    });
    hostile = await startSnmpsim({ dataDir: dir });
  });
  after(async () => {
    await agent?.close();
    await hostile?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const poll = async (sim: Snmpsim, community: string): Promise<Snapshot> => {
    const driver = new SnmpDriver(snmpInstance(`t-${community}`, sim.port, { Community: community }));
    try {
      return await driver.poll();
    } finally {
      await driver.close();
    }
  };

  it("reads the APC bank, the Raritan overcurrent protector and the Sentry4 phase of each outlet", async () => {
    assert.deepEqual(feeds(await poll(agent, "apc-rpdu2")), halves(8, "bank0", "bank1"));
    assert.deepEqual(feeds(await poll(agent, "raritan-px2")), halves(8, "breaker0", "breaker1"));
    assert.deepEqual(
      feeds(await poll(agent, "servertech-sentry4")),
      [0, 1, 2, 0, 1, 2, 0, 1].map((p) => `phase${p}`),
    );
  });

  it("gives none where the unit names an entity it does not report or points elsewhere", async () => {
    assert.deepEqual(feeds(await poll(hostile, "apc-rpdu2")), [
      "-",
      "bank1",
      "-",
      "bank0",
      "bank1",
      "bank1",
      "bank1",
      "bank1",
    ]);
    const raritan = await poll(hostile, "raritan-px2");
    assert.deepEqual(feeds(raritan), ["-", "-", "-", "-", "-", "inlet0", "breaker1", "breaker1"]);
    assert.equal(raritan.devices[0]?.outlets.length, 8, "every outlet is still read");
    assert.deepEqual(feeds(await poll(hostile, "servertech-sentry4")), [
      "-",
      "-",
      "phase2",
      "phase0",
      "phase1",
      "phase2",
      "phase0",
      "phase1",
    ]);
  });
});

/** `oid → value` of an snmprec file (as written). */
async function recorded(file: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const line of (await readFile(file, "utf8")).split("\n")) {
    const [oid, , ...rest] = line.replace(/\r$/, "").split("|");
    if (oid !== undefined && rest.length > 0) out.set(oid, rest.join("|"));
  }
  return out;
}

describe("feedsFrom: walks of real units served by snmpsimd", { skip: recordingsMissing }, () => {
  let agent: Snmpsim;
  before(async () => {
    agent = await startSnmpsim({ dataDir: SHARED_RECORDINGS! });
  });
  after(async () => {
    await agent?.close();
  });

  /** What the walk says of outlet n (1-based): the entity key, given the keys the device reports. */
  type Expectation = (walk: Map<string, string>, n: number) => string | undefined;
  const apcBank: Expectation = (walk, n) => {
    const bank = walk.get(`${R2}.9.2.2.1.6.${n}`) ?? walk.get(`${R2}.9.4.2.1.7.${n}`);
    return bank === undefined ? undefined : `bank${Number(bank) - 1}`;
  };
  const raritanOcp: Expectation = (walk, n) => {
    const pointer = walk.get(`${P2}.3.5.3.1.33.1.${n}`) ?? "";
    const k = pointer.startsWith(`${OCP_LABEL}.1.`) ? pointer.slice(OCP_LABEL.length + 3) : "";
    return /^[0-9]+$/.test(k) ? `breaker${Number(k) - 1}` : undefined;
  };
  const cases = [
    { file: "apc-ap8641.snmprec", profile: "apc-rpdu2", expect: apcBank },
    { file: "apc-ap8932.snmprec", profile: "apc-rpdu2", expect: apcBank },
    { file: "apc-ap7902b.snmprec", profile: "apc-rpdu2", expect: apcBank },
    { file: "raritan-pxe1847.snmprec", profile: "raritan-px2", expect: raritanOcp },
  ] as const;
  for (const c of cases) {
    it(`${c.file}: each outlet's entity as the walk names it, where the unit reports that entity`, async () => {
      const community = c.file.replace(/\.snmprec$/, "");
      const driver = new SnmpDriver(
        snmpInstance(`t-${community}`, agent.port, { Community: community, Profile: c.profile }, 3),
      );
      try {
        const s = await driver.poll();
        const walk = await recorded(join(SHARED_RECORDINGS!, c.file));
        const device = s.devices[0]!;
        const keys = new Set(device.entities.map((e) => e.key));
        const want = device.outlets.map((o) => {
          const key = c.expect(walk, o.index + 1);
          return key !== undefined && keys.has(key) ? key : "-";
        });
        assert.deepEqual(feeds(s), want);
        // Each of these units names one of its two banks or protectors for every outlet.
        assert.equal(new Set(want).size, 2, JSON.stringify(want));
        assert.ok(!want.includes("-"), JSON.stringify(want));
      } finally {
        await driver.close();
      }
    });
  }
});
