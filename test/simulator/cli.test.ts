import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseSimulateArgs, runSimulateCommand } from "../../src/simulator/cli.js";
import { getJson, request, TransportError, waitFor } from "../../testkit/sim-http.js";

function capture(): {
  lines: string[];
  errors: string[];
  out: (l: string) => void;
  err: (l: string) => void;
} {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => void lines.push(l), err: (l) => void errors.push(l) };
}

describe("pdu-bridge simulate", () => {
  it("parses the flags into options", () => {
    assert.deepEqual(
      parseSimulateArgs([
        "--port",
        "0",
        "--devices",
        "2",
        "--outlets",
        "16",
        "--oneview",
        "--https",
        "--host",
        "::1",
      ]),
      {
        host: "::1",
        port: 0,
        devices: 2,
        outlets: 16,
        oneview: true,
        https: true,
        seed: 1,
        stateLagMs: 0,
        idleDropMs: null,
        frozen: false,
      },
    );
    const frozen = parseSimulateArgs(["--frozen"]);
    assert.ok(typeof frozen === "object" && !("help" in frozen));
    assert.equal(frozen.frozen, true);
    const members = parseSimulateArgs(["--members", "3"]);
    assert.ok(typeof members === "object" && !("help" in members));
    assert.deepEqual(members.oneview, { members: 3 });
    assert.equal(members.port, 8080);
  });

  for (const argv of [["--bogus"], ["--port", "http"], ["--port", "70000"], ["--outlets", "0"], ["extra"]]) {
    it(`exits 2 with a message for ${argv.join(" ")}`, async () => {
      const io = capture();
      assert.equal(await runSimulateCommand(argv, io), 2);
      assert.match(io.errors[0] ?? "", /^simulate: /);
      assert.ok(io.errors.some((l) => l.includes("Usage: pdu-bridge simulate")));
      assert.deepEqual(io.lines, []);
    });
  }

  it("--help prints the usage and exits 0", async () => {
    const io = capture();
    assert.equal(await runSimulateCommand(["--help"], io), 0);
    assert.match(io.lines.join("\n"), /--oneview/);
  });

  it("runs a cluster, prints the URLs and login, and stops cleanly", async () => {
    const io = capture();
    const controller = new AbortController();
    const done = runSimulateCommand(["--port", "0", "--members", "1", "--outlets", "2"], {
      ...io,
      signal: controller.signal,
    });
    await waitFor(() => io.lines.some((l) => l.includes("Ctrl+C")), "the simulator to start", 5000);
    const urls = io.lines.flatMap((l) => /(http:\/\/127\.0\.0\.1:\d+) /.exec(l)?.[1] ?? []);
    assert.equal(urls.length, 2, io.lines.join("\n"));
    assert.ok(io.lines.includes("Login: admin / admin"));
    assert.equal((await getJson(`${urls[0]}/api/conf/oneview/enabled`)).data, true);
    assert.equal((await getJson(`${urls[1]}/api/conf/oneview/enabled`)).data, false);
    controller.abort();
    assert.equal(await done, 0);
    await assert.rejects(
      request(`${urls[0]}/api`),
      (e) => e instanceof TransportError && e.code === "ECONNREFUSED",
    );
  });

  it("exits 1 when the port is taken", async () => {
    const first = capture();
    const controller = new AbortController();
    const done = runSimulateCommand(["--port", "0"], { ...first, signal: controller.signal });
    try {
      await waitFor(() => first.lines.some((l) => l.includes("Ctrl+C")), "the simulator to start", 5000);
      const port = /127\.0\.0\.1:(\d+)/.exec(first.lines.join("\n"))?.[1] ?? "";
      const second = capture();
      assert.equal(await runSimulateCommand(["--port", port], second), 1);
      assert.match(second.errors.join("\n"), /EADDRINUSE/);
    } finally {
      controller.abort();
      assert.equal(await done, 0);
    }
  });
});
