/**
 * check-config and start apply one set of configuration rules and report every problem in one run,
 * in file order, through the real CLI: five different rule problems (each of a check that used to
 * stop at its first problem, or that only start applied) are all printed by `check-config` and by
 * `run`, the same lines, exit 2; and the rules that read the machine (the Kubernetes backend's pod,
 * the advertised address) refuse in check-config what start refuses.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { childEnv, CliProcess, hasStackTrace, tempDir } from "../../testkit/cli-process.js";

const PDU_LINES = ["Pdus:", "  rack-a:", "    Connection: { Host: 127.0.0.1 }"];

describe("one set of configuration rules, every problem in one run", () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const processes: CliProcess[] = [];

  before(async () => {
    dir = await tempDir();
  });

  after(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    await dir?.remove();
  });

  const run = async (args: string[], env: Record<string, string> = {}) => {
    const cli = CliProcess.spawn(args, childEnv(env));
    processes.push(cli);
    const exit = await cli.waitForExit(30_000);
    return { code: exit.code, stdout: cli.stdout, stderr: cli.stderr };
  };

  /** The key and line of each `config error:` line. */
  const keysAndLines = (stderr: string) =>
    stderr
      .trimEnd()
      .split("\n")
      .map((line) => /^config error: (\S+): .* line (\d+)$/.exec(line)?.slice(1) ?? [line]);

  it("five rule problems: check-config and start print all five, in file order, exit 2", async () => {
    const file = await dir.write(
      "five.yaml",
      [
        "Api:",
        '  PublicUrl: "https://pdu.example.com/console"', // 2: an origin only
        "Alarms:",
        "  WarnPercent: 90",
        "  CriticalPercent: 85", // 5: critical is the higher line
        "Pdus:",
        "  rack-a:",
        "    Connection: { Host: 127.0.0.1 }",
        "    Driver: snmp", // 9: Version 2c without a read community
        "Cluster:",
        "  Enabled: true", // 11: the embedded broker, of this replica alone
        "  Backend: etcd",
        "  MemberName: replica-a",
        "  RenewDeadlineSeconds: 20", // 14: not below LeaseDurationSeconds (15)
        "",
      ].join("\n"),
    );
    const expected = [
      ["Api.PublicUrl", "2"],
      ["Alarms.CriticalPercent", "5"],
      ["Pdus.rack-a.Snmp.Community", "9"],
      ["Cluster.Enabled", "11"],
      ["Cluster.RenewDeadlineSeconds", "14"],
    ];

    const check = await run(["check-config", "--config", file]);
    assert.equal(check.code, 2, check.stderr);
    assert.deepEqual(keysAndLines(check.stderr), expected, check.stderr);
    assert.equal(check.stdout, "");
    assert.ok(!hasStackTrace(check.stderr), check.stderr);
    assert.match(check.stderr, /Cluster\.Enabled: is true, which needs an external MQTT broker/);

    const start = await run(["--config", file]);
    assert.equal(start.code, 2, start.stderr);
    assert.equal(start.stderr, check.stderr, "start prints the same lines");
    assert.doesNotMatch(start.stdout, /pdu-bridge started/);
  });

  it("the rules that read the machine: check-config refuses what start would, on the same host", async () => {
    const file = await dir.write(
      "machine.yaml",
      [
        ...PDU_LINES,
        "Mqtt:",
        "  Connection: { Host: 127.0.0.1, Port: 1 }",
        "Health: { Enabled: false }",
        "Api:",
        "  Enabled: true",
        "  Bind: 127.0.0.1",
        "Cluster:",
        "  Enabled: true", // 11
        "  MemberName: replica-a",
        "  PeerNetworks: [10.0.0.0/8]", // 13: the API's address 127.0.0.1 is outside it
        "",
      ].join("\n"),
    );
    const env = { SERVICE_CLUSTER_SECRET: "s".repeat(16) + "t".repeat(16) };
    const expected = [
      // The Kubernetes backend (the default) outside a pod.
      ["Cluster.Backend", "11"],
      ["Cluster.PeerNetworks", "13"],
    ];
    const check = await run(["check-config", "--config", file], env);
    assert.equal(check.code, 2, check.stderr);
    assert.deepEqual(keysAndLines(check.stderr), expected, check.stderr);
    assert.match(check.stderr, /KUBERNETES_SERVICE_HOST is not set/);
    assert.match(check.stderr, /does not hold this replica's API address http:\/\/127\.0\.0\.1:8082/);

    const start = await run(["--config", file], env);
    assert.equal(start.code, 2, start.stderr);
    assert.equal(start.stderr, check.stderr, "start prints the same lines");
  });
});
