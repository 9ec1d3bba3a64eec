/**
 * The rules of `Webhooks` (docs/events.md, Webhooks): each receiver's URL (https unless
 * `AllowHttp`), and its signing secret from `SERVICE_WEBHOOK_<N>_SECRET` (or `_FILE`), N its
 * position from 0. The secrets stay out of the schema's shape (`Config.webhookSecrets`), so that
 * nothing that shows the configuration shows them.
 */
import type { ConfigError } from "./errors.js";
import { readSecret, type Env } from "./secrets.js";
import type { FileConfig } from "./schema.js";

/** The variable of receiver `index`'s signing secret. */
export const webhookSecretVariable = (index: number): string => `SERVICE_WEBHOOK_${index}_SECRET`;

/** Shortest signing secret accepted, in characters. */
export const MIN_WEBHOOK_SECRET_LENGTH = 16;

/** Each receiver's secret by position ("" when not set); unreadable `_FILE`s added to `problems`. */
export async function readWebhookSecrets(
  file: FileConfig,
  env: Env,
  problems: ConfigError[],
): Promise<string[]> {
  const secrets: string[] = [];
  for (let i = 0; i < file.Webhooks.length; i++) {
    secrets.push((await readSecret(env, webhookSecretVariable(i), problems)) ?? "");
  }
  return secrets;
}

/** A problem of one key: its path and what is wrong. */
export interface WebhookProblem {
  readonly path: readonly (string | number)[];
  readonly problem: string;
}

/** The rules of each receiver: its URL and its secret. */
export function webhookProblems(
  webhooks: FileConfig["Webhooks"],
  secrets: readonly string[],
): WebhookProblem[] {
  const problems: WebhookProblem[] = [];
  webhooks.forEach((hook, i) => {
    const problem = urlProblem(hook.Url, hook.AllowHttp);
    if (problem !== null) problems.push({ path: ["Webhooks", i, "Url"], problem });
    const secret = secrets[i] ?? "";
    const variable = webhookSecretVariable(i);
    if (secret === "")
      problems.push({
        path: ["Webhooks", i],
        problem: `needs its signing secret: set ${variable} (or ${variable}_FILE naming a file that holds it), at least ${MIN_WEBHOOK_SECRET_LENGTH} characters (openssl rand -hex 32)`,
      });
    else if ([...secret].length < MIN_WEBHOOK_SECRET_LENGTH)
      problems.push({
        path: ["Webhooks", i],
        problem: `${variable} must be at least ${MIN_WEBHOOK_SECRET_LENGTH} characters`,
      });
  });
  const names = new Set<string>();
  webhooks.forEach((hook, i) => {
    const label = hook.Name ?? String(i);
    if (names.has(label))
      problems.push({ path: ["Webhooks", i, "Name"], problem: `"${label}" names another receiver too` });
    names.add(label);
  });
  return problems;
}

/** What is wrong with a receiver's URL, or null; the message never repeats the URL (it may hold a token). */
function urlProblem(url: string, allowHttp: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "is not a URL";
  }
  if (parsed.protocol === "http:" && !allowHttp)
    return "is http://: webhooks go over https, or set AllowHttp: true for a receiver on a trusted network";
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return "must be an https:// URL";
  if (parsed.username !== "" || parsed.password !== "")
    return "must not hold credentials (user:password@): the receiver checks the signature instead";
  if (parsed.hash !== "") return "must not have a fragment (#...)";
  return null;
}
