/** Who may control from this page: an operator's session with sign-in on, else an entered API key. */
import { apiKey } from "./api.js";
import { signedIn, signInEnabled } from "./session.js";

export function mayControl(): boolean {
  return signInEnabled() ? signedIn()?.role === "operator" : apiKey.get() !== null;
}

/** Opens the key dialog (set by the shell); views offer it beside their controls. */
export const keyPrompt = { open: (): void => undefined };
