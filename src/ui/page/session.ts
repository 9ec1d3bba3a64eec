/**
 * Who uses the page. With sign-in on (the page's bootstrap data says so, and the service answers
 * `/ui/auth/session`), the page acts for the signed-in user: operators get the controls, viewers
 * none, and every change carries the session's CSRF token; a session that has ended sends the
 * browser back to sign in. Without sign-in the session is never asked for, and control needs the
 * API key (api.ts).
 */
import { bootstrap } from "./state.js";

const SESSION_PATH = "/ui/auth/session";
const LOGIN_PATH = "/ui/auth/login";
const LOGOUT_PATH = "/ui/auth/logout";
/** How often the page asks whether its session still lives (the check is not activity). */
const CHECK_MS = 30_000;

export interface SignedIn {
  readonly user: { readonly sub: string; readonly name: string };
  readonly role: "viewer" | "operator";
  readonly csrfToken: string;
}

let current: SignedIn | null = null;
let signInOn = false;

/** True when the service signs users in (then the API key is not used by the page). */
export const signInEnabled = (): boolean => signInOn;

/** The signed-in user, or null (sign-in off, or not known yet). */
export const signedIn = (): SignedIn | null => current;

/** To the sign-in, coming back to this view afterwards. */
export function signIn(): void {
  const back = `${location.pathname}${location.hash}`;
  location.assign(`${LOGIN_PATH}?return=${encodeURIComponent(back)}`);
}

async function fetchSession(): Promise<Response | null> {
  try {
    return await fetch(SESSION_PATH, { cache: "no-store", credentials: "same-origin" });
  } catch {
    return null;
  }
}

/** Learns whether sign-in is on and who is signed in; sends the browser to sign in when it must. */
export async function startSession(): Promise<void> {
  if (!bootstrap.signIn) return;
  const response = await fetchSession();
  if (response === null || response.status === 404) return;
  signInOn = true;
  if (response.status === 401) {
    signIn();
    return;
  }
  if (response.ok) current = (await response.json()) as SignedIn;
  window.setInterval(() => {
    void fetchSession().then((answer) => {
      if (answer?.status === 401) signIn();
    });
  }, CHECK_MS);
}

/** Headers of a change made with the session. */
export function sessionHeaders(): Record<string, string> {
  return current === null ? {} : { "x-csrf-token": current.csrfToken };
}

/** Ends the session at the service, then at the provider where it has an end-session endpoint. */
export async function signOut(): Promise<void> {
  let location = "/ui/auth/signed-out";
  try {
    const response = await fetch(LOGOUT_PATH, {
      method: "POST",
      headers: sessionHeaders(),
      cache: "no-store",
      credentials: "same-origin",
    });
    if (response.ok) location = ((await response.json()) as { location?: string }).location ?? location;
  } catch {
    // The session ends by itself; the page leaves anyway.
  }
  current = null;
  window.location.assign(location);
}
