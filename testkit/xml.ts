/**
 * A strict, small XML well-formedness check for generated documents (the bench's SVG charts): one
 * root element, balanced tags, quoted and unique attributes, only the five predefined or numeric
 * entities, no stray `<` or `&`. Returns the elements in document order, with their attributes and
 * parent, so a test can look at what was drawn. Throws with the offset of the first problem.
 */

export interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly parent: XmlElement | null;
  /** Character data directly inside the element (entities decoded). */
  text: string;
}

const NAME = /^[A-Za-z_][\w.:-]*/;
const ENTITY = /^&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9A-Fa-f]+);/;
const DECODE: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decode(raw: string, at: number): string {
  for (let i = raw.indexOf("&"); i !== -1; i = raw.indexOf("&", i + 1)) {
    if (!ENTITY.test(raw.slice(i))) throw new Error(`xml: bad entity at ${at + i}`);
  }
  if (raw.includes("<")) throw new Error(`xml: stray "<" at ${at + raw.indexOf("<")}`);
  return raw.replace(/&(#x[0-9A-Fa-f]+|#\d+|\w+);/g, (_, e: string) =>
    e.startsWith("#x")
      ? String.fromCodePoint(parseInt(e.slice(2), 16))
      : e.startsWith("#")
        ? String.fromCodePoint(Number(e.slice(1)))
        : DECODE[e]!,
  );
}

export function parseXml(doc: string): XmlElement[] {
  const elements: XmlElement[] = [];
  const stack: XmlElement[] = [];
  let roots = 0;
  let i = 0;
  if (doc.startsWith("<?xml")) {
    const end = doc.indexOf("?>");
    if (end === -1) throw new Error("xml: unterminated declaration");
    i = end + 2;
  }
  while (i < doc.length) {
    const lt = doc.indexOf("<", i);
    const text = doc.slice(i, lt === -1 ? doc.length : lt);
    const decoded = decode(text, i);
    if (stack.length === 0 && decoded.trim() !== "") throw new Error(`xml: text outside the root at ${i}`);
    if (stack.length > 0) stack[stack.length - 1]!.text += decoded;
    if (lt === -1) break;
    i = lt;
    if (doc.startsWith("<!--", i)) {
      const end = doc.indexOf("-->", i + 4);
      if (end === -1) throw new Error(`xml: unterminated comment at ${i}`);
      i = end + 3;
      continue;
    }
    if (doc.startsWith("</", i)) {
      const name = NAME.exec(doc.slice(i + 2))?.[0];
      const open = stack.pop();
      if (name === undefined || open?.name !== name) throw new Error(`xml: mismatched </${name}> at ${i}`);
      i += 2 + name.length;
      while (/\s/.test(doc[i] ?? "")) i++;
      if (doc[i] !== ">") throw new Error(`xml: bad end tag at ${i}`);
      i++;
      continue;
    }
    const name = NAME.exec(doc.slice(i + 1))?.[0];
    if (name === undefined) throw new Error(`xml: bad tag at ${i}`);
    i += 1 + name.length;
    const attributes: Record<string, string> = {};
    for (;;) {
      const ws = /^\s*/.exec(doc.slice(i))![0].length;
      i += ws;
      if (doc.startsWith("/>", i) || doc[i] === ">") break;
      if (ws === 0) throw new Error(`xml: no space before an attribute at ${i}`);
      const attr = NAME.exec(doc.slice(i))?.[0];
      if (attr === undefined) throw new Error(`xml: bad attribute at ${i}`);
      i += attr.length;
      const quote = /^\s*=\s*(["'])/.exec(doc.slice(i));
      if (quote === null) throw new Error(`xml: attribute ${attr} without a quoted value at ${i}`);
      i += quote[0].length;
      const end = doc.indexOf(quote[1]!, i);
      if (end === -1) throw new Error(`xml: unterminated attribute ${attr} at ${i}`);
      if (attr in attributes) throw new Error(`xml: duplicate attribute ${attr} at ${i}`);
      attributes[attr] = decode(doc.slice(i, end), i);
      i = end + 1;
    }
    if (stack.length === 0 && roots++ > 0) throw new Error(`xml: a second root element at ${i}`);
    const element: XmlElement = { name, attributes, parent: stack[stack.length - 1] ?? null, text: "" };
    elements.push(element);
    if (doc[i] === ">") {
      stack.push(element);
      i++;
    } else i += 2;
  }
  if (stack.length > 0) throw new Error(`xml: <${stack[stack.length - 1]!.name}> is never closed`);
  if (roots === 0) throw new Error("xml: no root element");
  return elements;
}
