import { describe, expect, it } from "vitest";

import {
  PLAN_COST_AXIS,
  TOP_SYMBOL,
  configurationText,
  noChartCaption,
  planParetoOption,
  planPoints,
  planTooltipHTML,
  stepUnit,
  type PlanChartData,
  type PlanRow,
} from "./plan_series";

type Any = any;

const row = (index: number, step_time_s: number, usd: number | null, nodes = 1): PlanRow => ({
  index,
  choices: { num_nodes: nodes, tensor_parallel: 8, pipeline_parallel: 2, interleave_stages: 1, micro_batch_size: 1,
    strategy: "zero1", recompute: "none" },
  data_parallel: nodes * 4,
  step_time_s,
  usd_per_million_tokens: usd,
});

// a front as the planner sends it need not be in step order here: the builder sorts it
const data: PlanChartData = {
  front: [row(7, 0.42, 0.9, 4), row(3, 0.85, 0.6, 1), row(5, 0.6, 0.7, 2)],
  top: row(7, 0.42, 0.9, 4),
};

describe("plan Pareto chart", () => {
  it("sorts the front's points by step time and leaves out points with no cost", () => {
    expect(planPoints(data).map((r) => r.index)).toEqual([7, 5, 3]);
    expect(planPoints({ front: [row(1, 2, null)], top: null })).toEqual([]);
  });

  it("puts step time in ms when every step is under a second, else in s", () => {
    expect(stepUnit([0.42, 0.85])).toEqual({ unit: "ms", per_s: 1000 });
    expect(stepUnit([0.5, 1.2])).toEqual({ unit: "s", per_s: 1 });
  });

  it("names the units on both axes and plots steps in the axis's unit", () => {
    const o = planParetoOption(data) as Any;
    expect(o.xAxis.name).toBe("Step time (ms)");
    expect(o.yAxis.name).toBe(PLAN_COST_AXIS);
    expect(PLAN_COST_AXIS).toContain("$ per M tokens");
    const front = o.series[0];
    // 0.42 s = 420 ms, 0.6 s = 600 ms, 0.85 s = 850 ms
    expect(front.data.map((d: Any) => d.value)).toEqual([[420, 0.9], [600, 0.7], [850, 0.6]]);
    expect(o.xAxis.axisLabel.formatter(400)).toMatch(/ ms$/);
    expect(o.yAxis.axisLabel.formatter(0.6)).toMatch(/^\$/);
  });

  it("marks the top-ranked candidate with a star at its point", () => {
    const o = planParetoOption(data) as Any;
    const top = o.series[1];
    expect(top.name).toBe("Top-ranked");
    expect(top.symbol).toBe(TOP_SYMBOL);
    expect(top.data).toEqual([{ value: [420, 0.9], point: 7 }]);
    expect(planParetoOption({ ...data, top: null }).series).toHaveLength(1);
  });

  it("names each point's configuration in its tooltip", () => {
    expect(configurationText(row(5, 0.6, 0.7, 2)))
      .toBe("2 nodes, TP 8, PP 2, DP 8, zero1, micro-batch 1, recompute none");
    const o = planParetoOption(data) as Any;
    const tip = o.tooltip.formatter({ data: { point: 7 } });
    expect(tip).toContain("Candidate 7</strong> — top-ranked");
    expect(tip).toContain("4 nodes, TP 8, PP 2, DP 16, zero1, micro-batch 1");
    expect(tip).toContain("Step time: 420.0 ms");
    expect(tip).toContain("Cost: $0.900 per M tokens");
    expect(o.tooltip.formatter({ data: { point: 3 } })).not.toContain("top-ranked");
    expect(planTooltipHTML({ ...row(1, 2, null), choices: { ...row(1, 2, null).choices, strategy: "<b>" } }, false))
      .toContain("&#60;b&#62;");
  });
});

describe("noChartCaption", () => {
  it("says no candidate was feasible, not that the node has no price, when the front is empty", () => {
    const reason = "No chart: no candidate was feasible (12 the tensor-parallel degree does not divide); see the rejected candidates below.";
    expect(noChartCaption({ front: [], top: null, empty_reason: reason })).toBe(reason);
  });
  it("names the missing price only for a front without costs", () => {
    expect(noChartCaption({ front: [row(1, 0.5, null)], top: row(1, 0.5, null) })).toMatch(/the node has no price/);
  });
});
