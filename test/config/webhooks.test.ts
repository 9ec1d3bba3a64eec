/**
 * `Webhooks` in the configuration (docs/events.md, Webhooks): a receiver's URL is https unless
 * `AllowHttp`, holds no credentials; its secret comes from SERVICE_WEBHOOK_<N>_SECRET and is
 * required; a bad one is a ConfigError naming the key (the CLI's exit 2); check-config never shows
 * a secret or anything of the URL beyond what the file says.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfigText } from "../../src/config/load.js";
import { effectiveConfigYaml } from "../../src/config/mask.js";

const SECRET = "whsec-config-8d3b1f6a2c";
const yaml = (hooks: string) => `Mqtt: { Embedded: { Bind: 127.0.0.1, Port: 0 } }
Pdus:
  lab: { Connection: { Host: 127.0.0.1 }, Credentials: { Username: a, Password: b } }
Webhooks:
${hooks}
`;

async function refused(text: string, env: Record<string, string>): Promise<ConfigError> {
  try {
    await parseConfigText(text, "webhooks.yaml", env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail("the configuration was accepted");
}

describe("Webhooks configuration", () => {
  it("takes an https receiver with its secret and defaults from the contract", async () => {
    const config = await parseConfigText(yaml("  - { Url: https://hooks.example.com/pdu }"), "w.yaml", {
      SERVICE_WEBHOOK_0_SECRET: SECRET,
    });
    const [hook] = config.Webhooks;
    assert.deepEqual(
      [hook?.Events, hook?.Timeout, hook?.RetryMaxDelay, hook?.MaxQueue, hook?.AllowHttp],
      [["alarm", "control", "availability", "sequence"], 5, 300, 10000, false],
    );
    assert.deepEqual(config.webhookSecrets, [SECRET]);
    assert.ok(!effectiveConfigYaml(config).includes(SECRET), "check-config shows no secret");
  });

  const cases: readonly (readonly [string, string, Record<string, string>, RegExp])[] = [
    [
      "http without AllowHttp",
      "  - { Url: http://hooks.example.com/pdu }",
      { SERVICE_WEBHOOK_0_SECRET: SECRET },
      /Webhooks\.0\.Url.*AllowHttp/s,
    ],
    [
      "not a URL",
      "  - { Url: not a url }",
      { SERVICE_WEBHOOK_0_SECRET: SECRET },
      /Webhooks\.0\.Url.*not a URL/s,
    ],
    [
      "credentials in the URL",
      "  - { Url: https://u:p@hooks.example.com/ }",
      { SERVICE_WEBHOOK_0_SECRET: SECRET },
      /Webhooks\.0\.Url.*credentials/s,
    ],
    [
      "no secret",
      "  - { Url: https://a.example/ }\n  - { Url: https://b.example/ }",
      { SERVICE_WEBHOOK_0_SECRET: SECRET },
      /Webhooks\.1.*SERVICE_WEBHOOK_1_SECRET/s,
    ],
    [
      "a short secret",
      "  - { Url: https://a.example/ }",
      { SERVICE_WEBHOOK_0_SECRET: "short" },
      /SERVICE_WEBHOOK_0_SECRET must be at least 16/,
    ],
    [
      "an unknown event kind",
      "  - { Url: https://a.example/, Events: [trap] }",
      { SERVICE_WEBHOOK_0_SECRET: SECRET },
      /Webhooks\.0\.Events/,
    ],
    [
      "two receivers of one name",
      "  - { Url: https://a.example/, Name: ops }\n  - { Url: https://b.example/, Name: ops }",
      { SERVICE_WEBHOOK_0_SECRET: SECRET, SERVICE_WEBHOOK_1_SECRET: SECRET },
      /Webhooks\.1\.Name/,
    ],
  ];
  for (const [what, hooks, env, message] of cases) {
    it(`refuses ${what}, naming the key`, async () => {
      const error = await refused(yaml(hooks), env);
      assert.match(error.message, message);
      assert.ok(!error.message.includes(SECRET));
    });
  }

  it("an http receiver with AllowHttp is taken", async () => {
    const config = await parseConfigText(
      yaml("  - { Url: http://127.0.0.1:9/x, AllowHttp: true }"),
      "w.yaml",
      {
        SERVICE_WEBHOOK_0_SECRET: SECRET,
      },
    );
    assert.equal(config.Webhooks.length, 1);
  });
});
