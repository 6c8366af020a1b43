// Display names of the engine's ids, for what a reader sees (headers, default names,
// lists). Ids stay where a user types them (the API, scenario JSON, the form's values).

/** Strategy kinds as their projects write them. */
export const STRATEGY_NAMES: Record<string, string> = {
  ddp: "DDP",
  zero1: "ZeRO-1",
  zero2: "ZeRO-2",
  zero3: "ZeRO-3",
  fsdp_full_shard: "FSDP FULL_SHARD",
  fsdp_hybrid_shard: "FSDP HYBRID_SHARD",
  zero_offload: "ZeRO-Offload",
  zero_infinity: "ZeRO-Infinity",
  megatron_dist_opt: "Megatron distributed optimizer",
};

/** "zero3" -> "ZeRO-3"; an unknown kind as it is. */
export function strategyName(kind: string): string {
  return STRATEGY_NAMES[kind] ?? kind;
}
