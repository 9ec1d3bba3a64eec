/**
 * Debian's chromium through playwright-core, as the browser tests use it: a fresh profile, no
 * background traffic (this machine has no network beyond loopback), every request the page makes
 * recorded, and CSP violations collected in `window.cspViolations`.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** A `skip` reason for node:test when chromium is not installed, else false. */
export const chromiumMissing: string | false = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (apt-get install -y chromium); CI installs it`;

export interface BrowserSession {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Every URL the page requested, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

export interface BrowserOptions {
  /** Accept the self-signed certificates of loopback test servers (an OpenID provider, an HTTPS API). */
  readonly ignoreHttpsErrors?: boolean;
}

export async function openBrowser(
  name: string,
  viewport?: { width: number; height: number },
  options: BrowserOptions = {},
): Promise<BrowserSession> {
  const profile = await mkdtemp(join(tmpdir(), `pdu-bridge-${name}-`));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ...(viewport ? { viewport } : {}),
    ...(options.ignoreHttpsErrors === true ? { ignoreHTTPSErrors: true } : {}),
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const requests: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  // CSP violations are recorded in the page, so tests can assert the policy breaks nothing.
  await page.addInitScript({
    content: `window.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) => {
        window.cspViolations.push(e.violatedDirective + " " + e.blockedURI);
      });`,
  });
  return {
    context,
    page,
    requests,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
