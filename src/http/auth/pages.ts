/**
 * The few pages of the sign-in that are not the console: a refusal that says why (no role, a
 * sign-in that failed a check), and "signed out". Static HTML with one stylesheet of the service's
 * own, no script, every value escaped.
 */
import { CONSOLE_PREFIX } from "../listener.js";

export const AUTH_PREFIX = `${CONSOLE_PREFIX}/auth`;
export const AUTH_STYLESHEET = `${AUTH_PREFIX}/page.css`;

const escape = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );

export const AUTH_CSS = `:root{color-scheme:light dark;font-family:system-ui,sans-serif}
body{max-width:40rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
h1{font-size:1.4rem}.why{padding:.75rem 1rem;border-left:4px solid #b91c1c;background:color-mix(in srgb,#b91c1c 8%,transparent)}
a.button{display:inline-block;margin-right:1rem;padding:.4rem .9rem;border:1px solid currentColor;border-radius:.3rem}
`;

export interface PageLink {
  readonly href: string;
  readonly text: string;
}

/** A page with a title, paragraphs (the first one marked as the reason when `why`) and links. */
export function authPage(
  title: string,
  paragraphs: readonly string[],
  links: readonly PageLink[],
  why = false,
): string {
  const body = paragraphs
    .map((p, i) => `<p${why && i === 0 ? ' class="why" role="alert"' : ""}>${escape(p)}</p>`)
    .join("\n");
  const nav = links.map((l) => `<a class="button" href="${escape(l.href)}">${escape(l.text)}</a>`).join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escape(title)} · pdu-bridge</title>
<link rel="stylesheet" href="${AUTH_STYLESHEET}">
</head>
<body>
<main>
<h1>${escape(title)}</h1>
${body}
<p>${nav}</p>
</main>
</body>
</html>
`;
}
