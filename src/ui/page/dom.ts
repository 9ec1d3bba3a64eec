/** A few DOM helpers: the console builds its elements directly, no framework. */

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

/** Creates an element: `on*` functions become listeners, `true` boolean attributes, null/false skipped. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.slice(2).toLowerCase(), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** Replaces the children of `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}

/** Sets text only when it changed (no layout work for unchanged values). */
export function setText(node: Node, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

/** Sets the class attribute only when it changed. */
export function setClass(element: Element, className: string): void {
  if (element.getAttribute("class") !== className) element.setAttribute("class", className);
}

/** Sets or removes an attribute only when it changed (null removes). */
export function setAttr(element: Element, name: string, value: string | null): void {
  if (value === null) {
    if (element.hasAttribute(name)) element.removeAttribute(name);
  } else if (element.getAttribute(name) !== value) element.setAttribute(name, value);
}

const SVG_NS = "http://www.w3.org/2000/svg" as const;

export function svg(
  tag: keyof SVGElementTagNameMap,
  attrs: Record<string, string | number> = {},
  ...children: Node[]
): SVGElement {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  for (const child of children) element.appendChild(child);
  return element;
}

/** A number with at most `digits` decimals, or an en dash for none. */
export function num(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  return value.toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}
