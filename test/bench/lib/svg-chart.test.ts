import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { escapeXml, lineChart, niceTicks } from "../../../bench/lib/svg-chart.js";
import { parseXml } from "../../../testkit/xml.js";

const chart = () =>
  lineChart({
    title: "CPU & memory <by size>",
    subtitle: `load 1.5 "quiet"`,
    xLabel: "PDUs",
    y1Label: "ms",
    y2Label: "MB",
    xTicks: [0, 250, 500, 4000],
    xTickLabels: { 4000: "4,000 @30 s" },
    series: [
      {
        name: "cpu bridge",
        axis: 1,
        color: "#2f81f7",
        dashed: false,
        points: [
          { x: 500, y: 2 },
          { x: 250, y: 1 },
          { x: 4000, y: 4 },
        ],
      },
      {
        name: "rss floor",
        axis: 2,
        color: "#e16f24",
        dashed: true,
        points: [
          { x: 250, y: 100 },
          { x: 4000, y: 400 },
        ],
      },
    ],
  });

describe("bench SVG chart", () => {
  it("is well-formed XML with an svg root, escaped text and a dark-theme style", () => {
    const svg = chart();
    const elements = parseXml(svg);
    assert.equal(elements[0]?.name, "svg");
    assert.equal(elements[0]?.attributes.xmlns, "http://www.w3.org/2000/svg");
    const texts = elements.filter((e) => e.name === "text").map((e) => e.text);
    assert.ok(
      texts.includes("CPU & memory <by size>"),
      "the title, escaped in the source, reads back intact",
    );
    assert.ok(texts.includes(`load 1.5 "quiet"`));
    assert.ok(texts.includes("4,000 @30 s"), "custom tick label");
    assert.ok(texts.includes("cpu bridge") && texts.includes("rss floor"), "legend");
    assert.match(elements.find((e) => e.name === "style")!.text, /prefers-color-scheme: dark/);
  });

  it("plots every point at its place: x by value, y by value on its own axis", () => {
    const circles = parseXml(chart()).filter((e) => e.name === "circle");
    const of = (series: string) =>
      circles
        .filter((c) => c.attributes["data-series"] === series)
        .map((c) => ({
          x: Number(c.attributes["data-x"]),
          y: Number(c.attributes["data-y"]),
          cx: Number(c.attributes.cx),
          cy: Number(c.attributes.cy),
        }));
    const cpu = of("cpu bridge");
    assert.deepEqual(
      cpu.map((p) => [p.x, p.y]),
      [
        [250, 1],
        [500, 2],
        [4000, 4],
      ],
      "sorted by x, the values given",
    );
    // linear x scale: 250 → 500 is 1/15 of 250 → 4000
    assert.ok(Math.abs((cpu[1]!.cx - cpu[0]!.cx) / (cpu[2]!.cx - cpu[0]!.cx) - 1 / 15) < 0.01);
    // y grows upwards, linearly from a zero baseline (y 1, 2, 4 → heights 1:2:4)
    const base = cpu[0]!.cy + (cpu[1]!.cy - cpu[0]!.cy) * -1; // y = 0
    assert.ok(Math.abs((base - cpu[2]!.cy) / (base - cpu[0]!.cy) - 4) < 0.05);
    const rss = of("rss floor");
    assert.deepEqual(
      rss.map((p) => p.y),
      [100, 400],
    );
    assert.equal(rss[0]!.cx, cpu[0]!.cx, "both axes share x");
    const polylines = parseXml(chart()).filter((e) => e.name === "polyline");
    assert.equal(polylines.length, 2);
    assert.equal(polylines[1]!.attributes["stroke-dasharray"], "6 4", "the floor is dashed");
  });

  it("ticks are round and cover the maximum", () => {
    assert.deepEqual(niceTicks(4.6), [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(niceTicks(480), [0, 100, 200, 300, 400, 500]);
    assert.deepEqual(niceTicks(0), [0, 1]);
    assert.equal(escapeXml(`a<b & "c"`), "a&lt;b &amp; &quot;c&quot;");
  });

  it("the XML check rejects what is not well-formed", () => {
    for (const bad of ["<svg><g></svg>", "<svg a=1/>", "<svg>a & b</svg>", "<a/><b/>", `<svg a="1" a="2"/>`])
      assert.throws(() => parseXml(bad), /^Error: xml: /, bad);
  });
});
