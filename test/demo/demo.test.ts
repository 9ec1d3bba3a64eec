/**
 * The newcomer's path: run the demo command, follow what it prints. It must reach READY, and the
 * printed curl command must switch an outlet.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { after, describe, it } from "node:test";
import { REPO_ROOT } from "../../testkit/repo.js";

const run = promisify(execFile);

describe("pdu-bridge demo", () => {
  const child = spawn(
    process.execPath,
    ["dist/src/main.js", "demo", "--api-port", "0", "--health-port", "0", "--mqtt-port", "0"],
    { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  after(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });

  async function printed(pattern: RegExp): Promise<RegExpMatchArray> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const match = stdout.match(pattern);
      if (match) return match;
      assert.ok(
        Date.now() < deadline,
        `demo never printed ${String(pattern)}; stdout:\n${stdout}\nstderr:\n${stderr}`,
      );
      await sleep(50);
    }
  }

  it("reaches READY, and the printed curl command switches an outlet; Ctrl-C stops it", async () => {
    const readyz = (await printed(/Readiness\s+(http:\S+)/))[1]!;
    const readings = (await printed(/Readings\s+(http:\S+)/))[1]!;
    const curl = (await printed(/^\s+(curl -sS .+)$/m))[1]!;
    assert.match(curl, /X-Api-Key: [A-Za-z0-9_-]{20,}/, "the command carries the generated key");
    // Once polled, the cluster's OneView groups with the rollups the PDU reports.
    await printed(/^ {2}group 2 ".+": \d+ member outlet\(s\)\n {4}apparentPower: sum \d+ VA avg /m);
    await printed(/^ {4}pduTotalRealPower: sum \d+ W$/m);

    let ready = "";
    const deadline = Date.now() + 20_000;
    while (ready !== "READY" && Date.now() < deadline) {
      ready = await fetch(readyz).then(
        (r) => r.text(),
        () => "",
      );
      if (ready !== "READY") await sleep(200);
    }
    assert.equal(ready, "READY");

    // The printed web console answers its page.
    const consoleUrl = (await printed(/Web console\s+(http:\S+)/))[1]!;
    const page = await fetch(consoleUrl);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="\/ui\/assets\/console-/);

    const target = curl.match(/outlets\/([^/]+)\/(\d+)\/control/)!;
    const { stdout: answer } = await run("sh", ["-c", curl]);
    assert.deepEqual(JSON.parse(answer), {
      ok: true,
      instanceId: "default",
      deviceId: target[1],
      index: Number(target[2]),
      action: "off",
    });

    // The simulator switched: the PDU itself reports the outlet off and drawing nothing once re-polled.
    const stateDeadline = Date.now() + 10_000;
    let outlet: { state: string; type: string; value: number }[] = [];
    for (;;) {
      const all = (await fetch(readings).then((r) => r.json())) as {
        deviceId: string;
        outletIndex: number | null;
        state: string;
        type: string;
        value: number;
      }[];
      outlet = all.filter((r) => r.deviceId === target[1] && r.outletIndex === Number(target[2]));
      if (outlet.some((r) => r.type === "realPower" && r.value === 0) || Date.now() > stateDeadline) break;
      await sleep(250);
    }
    assert.ok(outlet.length > 0);
    assert.ok(outlet.every((r) => r.state === "off"));
    assert.equal(outlet.find((r) => r.type === "realPower")?.value, 0);

    // The SNMP PDU beside the cluster: its printed command switches it through the same API.
    const snmpCurl = (await printed(/^\s+(curl -sS .+instances\/rack-apc\/.+)$/m))[1]!;
    const { stdout: snmpAnswer } = await run("sh", ["-c", snmpCurl]);
    assert.equal((JSON.parse(snmpAnswer) as { ok: boolean }).ok, true, snmpAnswer);
    const snmpDeadline = Date.now() + 10_000;
    let snmpOutlet: { state: string }[] = [];
    for (;;) {
      const all = (await fetch(readings).then((r) => r.json())) as {
        instanceId: string;
        outletIndex: number | null;
        state: string;
      }[];
      snmpOutlet = all.filter((r) => r.instanceId === "rack-apc" && r.outletIndex === 0);
      if (snmpOutlet.length > 0 && snmpOutlet.every((r) => r.state === "off")) break;
      assert.ok(Date.now() < snmpDeadline, `the SNMP outlet never showed off: ${JSON.stringify(snmpOutlet)}`);
      await sleep(250);
    }

    child.kill("SIGINT");
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 0, stderr);
  });
});
