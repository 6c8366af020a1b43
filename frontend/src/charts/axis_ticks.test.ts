// The memory panels' value-axis ticks as ECharts draws them (server-side rendering in node):
// distinct and with their unit. A whole-number formatter once printed "1, 1, 2" on a DDR
// panel whose nice interval was 0.5 GB.
import { describe, expect, it } from "vitest";
import * as echarts from "echarts";

import { sampleReport } from "../testdata/report";
import { embeddingChartOption } from "./recsys_series";
import { recsysReport } from "../testdata/recsys";
import { memoryChartOption } from "./series";

/** The tick labels ECharts renders on each value axis of `option`. */
function valueAxisLabels(option: object): string[][] {
  const chart = echarts.init(null, undefined, { renderer: "svg", ssr: true, width: 900, height: 500 });
  chart.setOption({ ...option, animation: false });
  const svg = chart.renderToSVGString();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const model = (chart as any).getModel();
  const out: string[][] = [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model.eachComponent("yAxis", (axisModel: any) => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const labels = axisModel.axis.getViewLabels().map((l: any) => l.formattedLabel as string);
    for (const l of labels) expect(svg).toContain(l);           // drawn as ECharts formats them
    out.push(labels);
  });
  chart.dispose();
  return out;
}

describe("memory panel ticks", () => {
  it("are distinct and carry the unit on a small DDR panel (1.4 GiB of 2.0 GiB)", () => {
    const r = sampleReport();
    const ddr = r.memory.per_node!.ddr!;
    Object.assign(ddr, { buffers_bytes: 1.5e9, total_bytes: 1.5e9, capacity_bytes: 2.2e9, free_bytes: 0.7e9 });
    ddr.parts = [{ name: "pinned staging buffers", category: "buffers", bytes: 1.5e9, note: null, phase: "persistent" }];
    const axes = valueAxisLabels(memoryChartOption(r));
    expect(axes.length).toBeGreaterThan(1);
    for (const ticks of axes) {
      expect(ticks.length).toBeGreaterThan(2);
      expect(new Set(ticks).size).toBe(ticks.length);
    }
    // the DDR panel (2nd), memory in GiB as HBM's: ECharts' nice interval up to the 2.05 GiB frame
    expect(axes[1].every((t) => t.endsWith(" GiB"))).toBe(true);
    expect(axes[1][0]).toBe("0 GiB");
    expect(axes[0].every((t) => t.endsWith(" GiB"))).toBe(true);   // HBM in GiB
  });

  it("are distinct on the embedding chart's stored-bytes panels", () => {
    const axes = valueAxisLabels(embeddingChartOption(recsysReport()));
    // HBM (800 GB) in GB, DDR (4 TB) and NVMe (60 TB) in TB: each panel in its own unit
    const units = ["GB", "TB", "TB"];
    axes.slice(1).forEach((ticks, i) => {
      expect(new Set(ticks).size).toBe(ticks.length);
      expect(ticks.every((t) => t.endsWith(` ${units[i]}`))).toBe(true);
    });
  });
});
