/**
 * The login check at start, through the composed App against real simulators that refuse a wrong
 * password (retCode 1004) and an unknown user (retCode 1001) as a real unit does: a wrong
 * password is reported before any command, in the log, `/health/integrations` and the console's
 * status (the page in Chromium too), naming the variable or key it came from; a PDU that does not
 * answer the login is asked again once it answers; a write that succeeds after the password was
 * fixed on the PDU clears the report; an instance without control is never logged in to; no
 * password appears anywhere.
 */
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import type { Simulator } from "../../src/simulator/index.js";
import type { StatusEventData, WireInstanceStatus } from "../../src/ui/wire.js";
import { chromiumMissing, openBrowser } from "../../testkit/browser.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { waitFor } from "../../testkit/wait.js";

const KEY = "credentials-key-0123456789abcdef";
const GOOD = "G00d-Pdu-Passw0rd";
const WRONG_IN_FILE = "Wr0ng-In-The-File";
const WRONG_IN_ENV = "Wr0ng-In-The-Env";

type Sims = "good" | "file" | "env" | "user" | "late" | "readonly";

const logins = (sim: Simulator): number => sim.requests.filter((r) => r.cmd === "login").length;

interface Integration {
  status: string;
  detail: string;
  login?: string;
}

describe("the PDU login is checked at start", () => {
  let h: AppHarness<Sims>;

  before(async () => {
    const users = { users: { operator: GOOD } };
    h = await startAppHarness<Sims>({
      sims: {
        good: { outlets: 2, seed: 41, ...users },
        file: { outlets: 2, seed: 42, ...users },
        env: { outlets: 2, seed: 43, ...users },
        user: { outlets: 2, seed: 44, ...users },
        late: { outlets: 2, seed: 45, ...users },
        readonly: { outlets: 2, seed: 46, ...users },
      },
      // `late` answers nothing useful at start: its login gets no answer, its polls fail.
      beforeStart: (sims) => sims.late.setFault("http500"),
      env: { SERVICE_PDU_ENV_PASSWORD: WRONG_IN_ENV },
      yaml: (s) =>
        appYaml({
          api: { key: KEY },
          pdus: [
            pduYaml("good", s.good, {
              actionsEnabled: true,
              credentials: { username: "operator", password: GOOD },
            }),
            pduYaml("file", s.file, {
              actionsEnabled: true,
              credentials: { username: "operator", password: WRONG_IN_FILE },
            }),
            // The password from SERVICE_PDU_ENV_PASSWORD (it wins over the file's).
            pduYaml("env", s.env, {
              actionsEnabled: true,
              credentials: { username: "operator", password: GOOD },
            }),
            pduYaml("user", s.user, {
              actionsEnabled: true,
              credentials: { username: "ghost", password: GOOD },
            }),
            pduYaml("late", s.late, {
              actionsEnabled: true,
              pollInterval: 1,
              credentials: { username: "operator", password: WRONG_IN_FILE },
            }),
            pduYaml("readonly", s.readonly, {
              credentials: { username: "operator", password: WRONG_IN_FILE },
            }),
          ],
        }),
    });
  });
  after(() => h?.close());

  const refusedLine = (instance: string) =>
    h.logs().find((l) => l.msg === "PDU login refused: control will fail" && l.instance === instance);
  const integrations = async () =>
    (await h.health.get("/health/integrations")).json<{ integrations: Record<string, Integration> }>()
      .integrations;

  test("a wrong password or user is logged at start, before any command, naming where it came from", async () => {
    for (const id of ["file", "env", "user"]) await waitFor(() => refusedLine(id), `the warning of ${id}`);
    assert.match(
      String(refusedLine("file")!.problem),
      /^login to PDU 127\.0\.0\.1:\d+ as "operator" failed: wrong password \(retCode 1004\); control of instance file will fail until it is fixed: set the PDU's password in Pdus\.file\.Credentials\.Password$/,
    );
    assert.match(String(refusedLine("env")!.problem), /set the PDU's password in SERVICE_PDU_ENV_PASSWORD$/);
    assert.match(
      String(refusedLine("user")!.problem),
      /as "ghost" failed: .*\(retCode 1001\); .*check the user name in Pdus\.user\.Credentials\.Username, and that the user exists on the PDU with the Control permission$/,
    );
    await waitFor(() => logins(h.sims.good) === 1, "the good instance logged in");
    assert.equal(refusedLine("good"), undefined);
    for (const id of ["good", "file", "env", "user"] as const) {
      assert.equal(logins(h.sims[id]), 1, `${id}: one login`);
      assert.deepEqual(h.sims[id].writes(), [], `${id}: no command was sent`);
    }
    assert.equal(logins(h.sims.readonly), 0, "no login where control is off");
  });

  test("/health/integrations reports it on the instance's entry", async () => {
    // The first poll of a slow start may still be running: its entry says so until it ends.
    const report = await waitFor(async () => {
      const r = await integrations();
      const polled = (id: string) => r[`pdu:${id}`]?.detail.startsWith("last successful poll") === true;
      return polled("file") && r["pdu:good"]?.status === "healthy" && r;
    }, "the first polls of instances file and good");
    const file = report["pdu:file"]!;
    assert.equal(file.status, "degraded");
    assert.match(
      file.detail,
      /^last successful poll \d+s ago; control will fail: login to PDU .* Pdus\.file\.Credentials\.Password$/,
    );
    assert.equal(file.login, String(refusedLine("file")!.problem));
    assert.match(report["pdu:env"]!.login ?? "", /SERVICE_PDU_ENV_PASSWORD/);
    assert.equal(report["pdu:good"]!.status, "healthy");
    assert.equal(report["pdu:good"]!.login, undefined);
  });

  test("the console's status events carry it", async (t) => {
    const statuses = await new Promise<readonly WireInstanceStatus[]>((resolve, reject) => {
      const request = http.get(
        `http://127.0.0.1:${h.app.endpoints.apiPort}/api/v1/events?snapshots=false`,
        (res) => {
          let text = "";
          res.setEncoding("utf8").on("data", (chunk: string) => {
            text += chunk;
            const data = /^event: status\ndata: (.*)$/m.exec(text)?.[1];
            if (data === undefined) return;
            request.destroy();
            resolve((JSON.parse(data) as StatusEventData).instances);
          });
        },
      );
      request.on("error", reject);
    });
    const of = (id: string) => statuses.find((s) => s.id === id)!;
    assert.match(of("file").loginError ?? "", /wrong password .* Pdus\.file\.Credentials\.Password$/);
    assert.equal(of("good").loginError, null);
    assert.equal(of("readonly").loginError, null);
    t.diagnostic(`loginError: ${of("file").loginError}`);
  });

  test("the console shows it in the fleet view and the PDU view", { skip: chromiumMissing }, async () => {
    const browser = await openBrowser("credentials");
    try {
      const { page } = browser;
      const origin = `http://127.0.0.1:${h.app.endpoints.apiPort}`;
      await page.goto(`${origin}/ui/`);
      const row = page.locator('[data-instance="file"]');
      await waitFor(
        async () =>
          /Control will fail: login to PDU .*Pdus\.file\.Credentials\.Password/.test(
            (await row.textContent()) ?? "",
          ),
        "the fleet row",
        20_000,
      );
      assert.doesNotMatch(
        (await page.locator('[data-instance="good"]').textContent()) ?? "",
        /Control will fail/,
      );
      await page.goto(`${origin}/ui/#/i/env`);
      const banner = page.locator("p.banner");
      await waitFor(
        async () => /Control will fail: .*SERVICE_PDU_ENV_PASSWORD/.test((await banner.textContent()) ?? ""),
        "the PDU view's banner",
        20_000,
      );
      assert.equal(await banner.isVisible(), true);
    } finally {
      await browser.close();
    }
  });

  test("a PDU that did not answer the login is asked again once it answers", async () => {
    assert.equal(refusedLine("late"), undefined, "no verdict while it answered 500");
    await h.sims.late.setFault(null);
    await waitFor(() => refusedLine("late"), "the late instance's login refused", 20_000);
    assert.match(String(refusedLine("late")!.problem), /wrong password/);
    assert.match((await integrations())["pdu:late"]!.login ?? "", /Pdus\.late\.Credentials\.Password/);
  });

  test("a write that succeeds after the password was fixed on the PDU clears it", async () => {
    // The operator sets the configured password on the unit instead.
    h.sims.file.setPassword("operator", WRONG_IN_FILE);
    const deviceId = h.sims.file.deviceIds()[0]!;
    const res = await h.api.post(
      `/api/v1/instances/file/outlets/${deviceId}/0/control`,
      { action: "on" },
      { "x-api-key": KEY },
    );
    assert.equal(res.status, 200, res.text);
    const file = (await integrations())["pdu:file"]!;
    assert.equal(file.login, undefined);
    assert.equal(file.status, "healthy");
    assert.ok(h.logs().some((l) => l.msg === "PDU login works again" && l.instance === "file"));
  });

  test("no password is written anywhere", async () => {
    const text = h.logText() + JSON.stringify(await integrations());
    for (const secret of [GOOD, WRONG_IN_FILE, WRONG_IN_ENV])
      assert.ok(!text.includes(secret), "a password leaked");
  });
});
