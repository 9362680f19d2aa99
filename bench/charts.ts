/**
 * A benchmark's time series (bench/figures.ts `Series`) drawn as an SVG line chart, for docs/benchmarks/.
 *
 * The chart is a Vega-Lite specification (lines of (x, y) points coloured by line, dashed horizontal rules for the
 * limits), compiled to Vega and rendered headlessly by Vega's own SVG renderer (`view.toSVG()`, no browser and no
 * canvas: without the optional `canvas` package Vega estimates text widths, which is deterministic, so the same series
 * always gives the same bytes and the committed charts can be checked against their data).
 */
import { parse, View } from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import type { Series } from "./figures.ts";

/** Plot area in px (Vega adds the axes, titles and legend around it). */
const WIDTH = 640;
const HEIGHT = 220;
/** Lines with at most this many points get a dot per point (more would be a smudge). */
const DOTS_UP_TO = 40;

/**
 * Long titles wrap at this many characters (a title given as an array of lines is drawn one line each): Vega, which
 * measures no text without a canvas, estimates 0.8 em per character, so a longer line would widen the SVG past its plot.
 */
const TITLE_LINE = 64;

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return line === "" ? lines : [...lines, line];
}

/** The Vega-Lite specification of a series' chart. */
export function chartSpec(s: Series): TopLevelSpec {
  const values = s.lines.flatMap((l) => l.points.map(([x, y]) => ({ line: l.name, x, y })));
  const names = s.lines.map((l) => l.name);
  const dots = s.lines.every((l) => l.points.length <= DOTS_UP_TO);
  const limits = s.limits ?? [];
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: wrap(s.title, TITLE_LINE), anchor: "start" },
    width: WIDTH,
    height: HEIGHT,
    background: "white",
    layer: [
      {
        data: { values },
        mark: { type: "line", point: dots, strokeWidth: 1.5 },
        encoding: {
          // Time series start at 0 (Vega-Lite would start the axis at the first sample).
          x: { field: "x", type: "quantitative", title: s.x, scale: { zero: true } },
          y: { field: "y", type: "quantitative", title: s.y },
          // The lines in the series' order, in the legend and in the colours; one line needs no legend.
          color: { field: "line", type: "nominal", title: null, sort: names, legend: names.length > 1 ? { orient: "bottom", columns: 2, labelLimit: 320 } : null },
        },
      },
      ...(limits.length === 0
        ? []
        : [
            {
              data: { values: limits.map((l) => ({ limit: l.name, y: l.y })) },
              layer: [
                { mark: { type: "rule" as const, strokeDash: [6, 4], color: "#888" }, encoding: { y: { field: "y", type: "quantitative" as const } } },
                {
                  mark: { type: "text" as const, align: "right" as const, baseline: "bottom" as const, dy: -2, color: "#555" },
                  encoding: { text: { field: "limit", type: "nominal" as const }, y: { field: "y", type: "quantitative" as const }, x: { value: WIDTH } },
                },
              ],
            },
          ]),
    ],
  };
}

/** The series' chart as an SVG document. */
export async function renderChart(s: Series): Promise<string> {
  const view = new View(parse(compile(chartSpec(s)).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
