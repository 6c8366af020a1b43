// The scenario builder at "/": pick a model, a node and a strategy, see a live estimate,
// submit to create a scenario and start a run, land on the run's page. Errors from the
// API are shown next to the input whose name is the error's dotted path.

import "../base";

import { ApiError, endpoints, getList, listCatalog, postJSON, type FieldErrors } from "../api";
import { h, readJSONScript, replaceChildren } from "../dom";
import {
  ACTIVATION_OFFLOAD,
  CHECKPOINT_CONTENTS,
  CHECKPOINT_METHODS,
  CHECKPOINT_TARGETS,
  COMPUTE_MODELS,
  CONVENTIONS,
  CPU_ISAS,
  DEEPSPEED_RELEASES,
  DEEPSPEED_ZERO3,
  FSDP_KINDS,
  FSDP_VERSIONS,
  DEFAULT_VALUES,
  FIELD_LABELS,
  OFFLOAD_TARGETS,
  OPTIMIZERS,
  LORA_ADAPTER_DTYPES,
  LORA_DROPOUT_POSITIONS,
  LORA_IMPLEMENTATIONS,
  LORA_BASE_DTYPES,
  PRECISIONS,
  RECOMPUTE,
  PREFERENCE_REFERENCES,
  LOSS_KERNELS,
  POSITION_EMBEDDINGS,
  FP8_FORMATS,
  FRAMEWORKS,
  FP8_RECIPES,
  PIPELINE_SCHEDULES,
  PLACEHOLDERS,
  QUANTIZE_BITS,
  SOFTWARE_STACKS,
  CP_COMM_TYPES,
  STRATEGIES,
  TRI_STATE,
  buildRequest,
  hasAdvancedValues,
  inputNameForErrorKey,
  modelOptionLabel,
  nodeGpus,
  nodeOptionLabel,
  nodeTiers,
  offloadAfterStrategyChange,
  offloadRules,
  settingsNotOnForm,
  suggestName,
  valuesFromScenario,
  type FormValues,
} from "../form/scenario";
import { type Control, decimal, fillSelect, grid, integer, labelledFields, select } from "../form/fields";
import { estimateNotesSummary, estimateStepSummary, estimateSummary, trainableLine } from "../report";
import { recsysForm } from "./recsys_form";
import { hfConfigErrorLines, hfConfigRequest, importSummary, importedModelLabel, withImportedModel, type HfImport } from "../form/hf_config";
import type { CatalogEntry, ClusterProfileEntry, Example, Report, Run, ScenarioJSON } from "../types";
import { formatParams } from "../units";

const f = labelledFields(FIELD_LABELS);


function mount(root: HTMLElement): void {
  const examples = readJSONScript<Example[]>("examples-data") ?? [];
  let models: CatalogEntry[] = [];
  let nodes: CatalogEntry[] = [];
  let base: ScenarioJSON | null = null; // the example the form was filled from
  let nameTouched = false;

  // ------------------------------------------------------------------ controls
  const exampleSelect = select([["", examples.length ? "— start from an example —" : "— no examples —"]], {
    "aria-describedby": "example-note",
  });
  examples.forEach((ex, i) => exampleSelect.append(h("option", { value: String(i) }, ex.name)));
  exampleSelect.id = "f-example";
  exampleSelect.name = "example";

  const c = {
    name: h("input", { type: "text", required: true, autocomplete: "off", placeholder: "e.g. 70B on two DGX H100" }),
    model: select([["", "Loading models…"]], { required: true }),
    positionEmbedding: select(POSITION_EMBEDDINGS),
    node: select([["", "Loading node templates…"]], { required: true }),
    profile: select([["", "none: the engine's default efficiencies"]]),
    numNodes: integer({ required: true }),
    gpus: integer({ required: true }),
    kind: select(STRATEGIES),
    shardGroup: integer({ placeholder: "GPUs of one node" }),
    offloadOpt: select(OFFLOAD_TARGETS),
    offloadParams: select(OFFLOAD_TARGETS),
    micro: integer({ required: true }),
    global: integer({ placeholder: "micro batch × data-parallel GPUs" }),
    seq: integer({ required: true }),
    precision: select(PRECISIONS),
    optimizer: select(OPTIMIZERS),
    recompute: select(RECOMPUTE),
    recomputeLayers: integer({ placeholder: PLACEHOLDERS["training.recompute_layers"] }),
    recomputeEvery: integer({ placeholder: PLACEHOLDERS["training.recompute_every"] }),
    recomputeModules: h("input", { type: "text", autocomplete: "off", placeholder: PLACEHOLDERS["training.recompute_modules"] }),
    fp8ActStore: h("input", { type: "checkbox", role: "switch" }),
    preference: select(PREFERENCE_REFERENCES),
    lossKernel: select(LOSS_KERNELS),
    flash: h("input", { type: "checkbox", role: "switch" }),
    seqParallel: h("input", { type: "checkbox", role: "switch" }),
    tp: integer({ required: true }),
    loraRank: integer({ placeholder: PLACEHOLDERS["training.lora.rank"] }),
    loraAlpha: decimal("training.lora.alpha", { min: 0 }),
    loraDropout: decimal("training.lora.dropout", { min: 0, max: 0.99 }),
    loraTargets: h("input", { type: "text", autocomplete: "off", placeholder: PLACEHOLDERS["training.lora.targets"] }),
    fp8Recipe: select(FP8_RECIPES),
    fp8Format: select(FP8_FORMATS),
    fp8History: integer({ placeholder: PLACEHOLDERS["training.fp8.amax_history_len"] }),
    fp8Param: h("input", { type: "checkbox", role: "switch" }),
    framework: select(FRAMEWORKS),
    loraBase: select(LORA_BASE_DTYPES),
    loraDoubleQuant: h("input", { type: "checkbox", role: "switch" }),
    loraBlock: integer({ min: 32, placeholder: PLACEHOLDERS["training.lora.quant_block_size"] }),
    loraAdapterDtype: select(LORA_ADAPTER_DTYPES),
    loraImplementation: select(LORA_IMPLEMENTATIONS),
    loraDropoutPosition: select(LORA_DROPOUT_POSITIONS),
    pp: integer({ required: true }),
    cp: integer({ required: true, min: 1 }),
    ep: integer({ min: 1, placeholder: PLACEHOLDERS["training.expert_parallel"] }),
    capacity: decimal("training.moe_capacity_factor", { min: 0 }),
    imbalance: decimal("training.moe_routing_imbalance", { min: 1 }),
    groupTopk: integer({ min: 1, placeholder: PLACEHOLDERS["training.moe_router_group_topk"] }),
    a2aOverlap: h("input", { type: "checkbox", role: "switch" }),
    ppFirst: integer({ placeholder: PLACEHOLDERS["training.first_pipeline_layers"] }),
    ppLast: integer({ placeholder: PLACEHOLDERS["training.last_pipeline_layers"] }),
    ppLayers: h("input", { type: "text", autocomplete: "off", placeholder: PLACEHOLDERS["training.pipeline_layers"] }),
    ppSchedule: select(PIPELINE_SCHEDULES),
    convention: select(CONVENTIONS),
    // advanced
    computeEff: decimal("training.compute_efficiency", { min: 0, max: 1 }),
    networkEff: decimal("training.network_efficiency", { min: 0, max: 1 }),
    prefetchDepth: integer({ min: 0, placeholder: PLACEHOLDERS["strategy.prefetch_depth"] }),
    prefetchMiss: decimal("strategy.prefetch_miss_rate", { min: 0, max: 1 }),
    offloadAct: select(ACTIVATION_OFFLOAD),
    computeModel: select(COMPUTE_MODELS),
    softwareStack: select(SOFTWARE_STACKS),
    cpComm: select(CP_COMM_TYPES),
    overlapGradReduce: select(TRI_STATE),
    gradAccFusion: select(TRI_STATE),
    overlapParamGather: h("input", { type: "checkbox", role: "switch" }),
    dsRelease: select(DEEPSPEED_RELEASES),
    fsdpVersion: select(FSDP_VERSIONS),
    repeatKv: h("input", { type: "checkbox", role: "switch" }),
    fusedNorm: h("input", { type: "checkbox", role: "switch" }),
    fusedMlp: select(TRI_STATE),
    cpuOptCores: decimal("strategy.cpu_optimizer_cores_per_gpu", { min: 0 }),
    cpuCores: integer({ placeholder: PLACEHOLDERS["cluster.cpu_cores"] }),
    cpuIsa: select(CPU_ISAS),
    nvlinkDomain: integer({ min: 1, placeholder: PLACEHOLDERS["cluster.nvlink_domain_gpus"] }),
    // checkpoint
    ckTarget: select(CHECKPOINT_TARGETS),
    ckMethod: select(CHECKPOINT_METHODS),
    ckContent: select(CHECKPOINT_CONTENTS),
    ckSharded: h("input", { type: "checkbox", role: "switch" }),
    ckInterval: decimal("checkpoint.interval_s", { min: 0 }),
    ckQuantize: select(QUANTIZE_BITS),
    ckDiff: decimal("checkpoint.differential_fraction", { min: 0, max: 1 }),
    ckRate: decimal("checkpoint.gpu_failure_rate_per_hour", { min: 0 }),
    ckMtbf: decimal("checkpoint.mtbf_s", { min: 0 }),
  };

  const shardGroupField = f("strategy.shard_group_size", c.shardGroup, {
    unit: "GPUs",
    help: "HYBRID_SHARD shards inside groups of this many GPUs and replicates across groups.",
  });

  // the model-kind switch and the recommendation model's inputs
  const rs = recsysForm();

  // ---- import a Hugging Face config.json: pasted or read from a file, sent to the API
  const hfText = h("textarea", { id: "f-hf-config", name: "hf_config", rows: 6, spellcheck: "false",
    autocomplete: "off", placeholder: '{"model_type": "llama", "hidden_size": 4096, …}',
    "aria-describedby": "hf-config-help" });
  const hfFile = h("input", { type: "file", id: "f-hf-config-file", accept: ".json,application/json" });
  const hfButton = h("button", { type: "button", id: "hf-config-import", class: "secondary" }, "Use this config.json");
  const hfResult = h("div", { id: "hf-config-result", "aria-live": "polite" });
  const hfPanel = h("details", { id: "hf-config" },
    h("summary", null, "Import a Hugging Face config.json"),
    h("label", { for: "f-hf-config" }, "config.json (paste it, or choose the file)"),
    hfText,
    h("small", { id: "hf-config-help", class: "field-help" },
      "The model's config.json from the Hub (llama, mistral, mixtral, qwen2, gemma, gemma2, phi3, falcon, " +
      "deepseek_v3, deepseek_v2, bloom); " +
      "nothing is fetched. Its architecture becomes the model of this scenario."),
    grid(h("div", { class: "field" }, h("label", { for: "f-hf-config-file" }, "or the file"), hfFile),
      h("div", { class: "field" }, hfButton)),
    hfResult);
  // its typing is no scenario input: no live estimate, no name change
  for (const type of ["input", "change"]) hfPanel.addEventListener(type, (e) => e.stopPropagation());

  const exampleNote = h("small", { id: "example-note" }, "Fills every input below; you can change any of them.");
  const errorSummary = h("article", { id: "form-errors", class: "error-summary", role: "alert", tabindex: -1, hidden: true });
  const estimate = h("article", { id: "live-estimate", class: "live-estimate", "aria-live": "polite" },
    h("p", null, "Live estimate: fill the form to see whether it fits."));
  const submit = h("button", { type: "submit", id: "submit-scenario" }, "Save and run");

  const advanced = h(
    "details",
    { id: "advanced-settings" },
    h("summary", null, "Advanced: compute model, efficiencies, framework options, prefetch, host CPU"),
    grid(
      f("training.compute_model", c.computeModel, {
        unit: "how compute time is found",
        help: "work: each layer's time from its GEMM shapes after the tensor-parallel split, its attention " +
          "kernel and its memory-bound kernels, per GPU generation; constant: peak FLOP/s × compute " +
          "efficiency for every FLOP. Blank = work, or constant when a compute efficiency is given.",
      }),
      f("training.software_stack", c.softwareStack, {
        unit: "whose element-wise kernels",
        help: "Norms, activations and other memory-bound kernels as bytes over HBM bandwidth, fused or not " +
          "by this stack (work model). Blank = Megatron's with the Megatron framework, eager PyTorch otherwise.",
      }),
    ),
    grid(
      f("training.compute_efficiency", c.computeEff, {
        unit: "fraction of peak FLOP/s, 0–1",
        help: "What a layer's kernels reach; setting it selects the constant compute model. Blank = from the " +
          "work (0.55 with the constant model).",
      }),
      f("training.network_efficiency", c.networkEff, {
        unit: "fraction of link GB/s, 0–1",
        help: "What NCCL collectives reach; blank = 0.8.",
      }),
    ),
    grid(
      f("strategy.prefetch_depth", c.prefetchDepth, {
        unit: "layers ahead",
        help: "Layer i + k is fetched while layer i computes; 0 = no prefetch; blank = 1.",
      }),
      f("strategy.prefetch_miss_rate", c.prefetchMiss, {
        unit: "fraction of fetches, 0–1",
        help: "Mispredicted prefetches (MoE routing, dynamic graphs) stall the GPU; blank = 0.",
      }),
    ),
    f("strategy.offload_activations", c.offloadAct, {
      unit: "memory tier",
      help: "Activation checkpoints kept in CPU DDR and fetched back for the backward pass.",
    }),
    grid(
      f("training.overlap_grad_reduce", c.overlapGradReduce, {
        unit: "data-parallel all-reduce",
        help: "On: gradients are reduced bucket by bucket during the last micro-batch's backward (torch DDP, " +
          "Megatron --overlap-grad-reduce); off: after it. Blank = off for the Megatron framework, on otherwise.",
      }),
      f("training.gradient_accumulation_fusion", c.gradAccFusion, {
        unit: "weight-gradient GEMMs",
        help: "On: the weight-gradient GEMMs add into the accumulation buffer themselves (Megatron " +
          "--gradient-accumulation-fusion); off: each micro-batch after the first adds its gradients in a pass " +
          "of its own. Blank = on for the Megatron framework, off otherwise.",
      }),
    ),
    f("training.overlap_param_gather", c.overlapParamGather, {
      unit: "Megatron distributed optimizer only",
      help: "The updated parameters are all-gathered bucket by bucket in the next step's forward instead of " +
        "after the optimizer step (Megatron --overlap-param-gather). Needs the Megatron distributed optimizer.",
    }),
    grid(
      f("strategy.fsdp_version", c.fsdpVersion, {
        unit: "PyTorch FSDP only",
        help: "FSDP1 (FullyShardedDataParallel) gathers each block into one flat parameter; FSDP2 " +
          "(fully_shard, torchtitan's) gathers per-parameter shards into a buffer and copies them out, and " +
          "copies the gradients into a reduce-scatter buffer: two HBM passes on the compute stream.",
      }),
      f("training.repeat_kv", c.repeatKv, {
        unit: "GQA: torchtitan, HF eager / SDPA",
        help: "The K/V heads are copied to every query head before the attention kernel (repeat_kv), " +
          "as torchtitan and Hugging Face's eager and SDPA attention do; off when the kernel reads " +
          "grouped K/V itself (FlashAttention, SDPA enable_gqa, Transformer Engine).",
      }),
      f("training.fused_norm", c.fusedNorm, {
        unit: "transformers + Liger kernels",
        help: "Liger's LigerRMSNorm (NeMo AutoModel applies Liger's kernels by default without TP or CP): " +
          "each norm keeps its 16-bit input and an fp32 rstd a token, not transformers' fp32 copy of the input.",
      }),
      f("training.fused_mlp_activation", c.fusedMlp, {
        unit: "SwiGLU / GeLU in one kernel",
        help: "On: the activation and (SwiGLU) the product run as one kernel that keeps only its inputs " +
          "(Megatron's bias_swiglu, Liger's LigerSiLUMulFunction); off: transformers' separate ops. " +
          "Blank = on for the Megatron framework, off otherwise.",
      }),
    ),
    grid(
      f("strategy.deepspeed_release", c.dsRelease, {
        unit: "DeepSpeed ZeRO-3 only",
        help: "How ZeRO-3 fetches and reduces: the current release buckets them; v0.3–v0.5 fetched each " +
          "parameter synchronously and reduce-scattered each gradient on its own.",
      }),
      f("strategy.cpu_optimizer_cores_per_gpu", c.cpuOptCores, {
        unit: "cores",
        help: "Cores each GPU's CPU optimizer may use (offloaded optimizer: DeepSpeed's CPU-Adam, or torch's " +
          "AdamW under FSDP's CPU offload). Blank = the host's cores / its GPUs (DeepSpeed --bind_cores_to_rank).",
      }),
    ),
    grid(
      f("cluster.cpu_cores", c.cpuCores, {
        unit: "physical cores, all sockets",
        help: "The host's cores, which bound the CPU optimizer's parameters per second. Blank = the node template's.",
      }),
      f("cluster.cpu_isa", c.cpuIsa, {
        unit: "CPU-Adam's SIMD width",
        help: "The widest vector ISA DeepSpeed's CPU-Adam builds for: AVX2 updates half as many parameters " +
          "per core and second as AVX-512. Blank = the node template's.",
      }),
      f("cluster.nvlink_domain_gpus", c.nvlinkDomain, {
        unit: "GPUs, a multiple of GPUs per node",
        help: "GPUs one NVLink fabric joins: collectives of a group inside it run at NVLink bandwidth, " +
          "wider groups cross the NICs. GB200 NVL72: 72 (18 trays of 4); DDR, NICs and price stay per node. " +
          "Blank = the node template's (one node on HGX/DGX).",
      }),
    ),
  );

  const form = h(
    "form",
    { id: "scenario-form", "aria-describedby": "form-errors" },
    h(
      "fieldset",
      null,
      h("legend", null, h("strong", null, "Start")),
      grid(
        h("div", { class: "field" }, h("label", { for: "f-example" }, "Example"), exampleSelect, exampleNote),
        f("name", c.name, { unit: "text" }),
      ),
    ),
    h(
      "fieldset",
      null,
      h("legend", null, h("strong", null, "Model and hardware")),
      rs.kindField,
      grid(
        f("model.preset", c.model, { unit: "preset" }),
        f("model.position_embedding", c.positionEmbedding, {
          unit: "architecture",
          help: "How attention sees token positions: RoPE (Llama, no parameters), a learned " +
            "max_seq_len × hidden table (GPT-2, OPT), or ALiBi's per-head biases on the scores " +
            "(BLOOM, MPT; eager attention adds them). Blank = the model's own.",
        }),
        f("cluster.node", c.node, { unit: "preset: GPUs, tiers" }),
      ),
      grid(
        f("cluster.num_nodes", c.numNodes, { unit: "nodes" }),
        f("cluster.gpus_per_node", c.gpus, { unit: "GPUs" }),
        f("cluster.profile", c.profile, { unit: "fitted to measurements" }),
      ),
      hfPanel,
    ),
    rs.fieldset,
    h(
      "fieldset",
      null,
      h("legend", null, h("strong", null, "Training")),
      grid(
        f("training.micro_batch_size", c.micro, { unit: "sequences per GPU" }),
        f("training.global_batch_size", c.global, { unit: "sequences per step" }),
        f("training.seq_len", c.seq, { unit: "tokens" }),
      ),
      grid(
        f("training.precision", c.precision, { unit: "bytes per value" }),
        f("training.optimizer", c.optimizer, { unit: "sets bytes/param" }),
        f("training.recompute", c.recompute, { unit: "activations" }),
      ),
      grid(
        f("training.recompute_layers", c.recomputeLayers, {
          unit: "per stage; with full",
          help: "Megatron-LM --recompute-method block --recompute-num-layers k: the first k layers of " +
            "each pipeline stage keep only their input; the others keep all their activations.",
        }),
        f("training.recompute_every", c.recomputeEvery, {
          unit: "k; with full",
          help: "torchtitan selective_ac_option = \"k\": every k-th layer (k, 2k, ...) is checkpointed.",
        }),
        f("training.recompute_modules", c.recomputeModules, {
          unit: "with selective; Megatron",
          help: "Megatron-Core --recompute-modules: core_attn (the default), layernorm (norm outputs freed " +
            "and rebuilt), mla_up_proj (latent attention's Q, K, V rebuilt from the latents), moe_act " +
            "(the experts' SwiGLU output rebuilt), as DeepSeek-V3 trained (report Sec. 3.2.3).",
        }),
        f("training.activation_func_fp8_input_store", c.fp8ActStore, {
          unit: "SwiGLU; Megatron",
          help: "Megatron-Core activation_func_fp8_input_store: fused SwiGLU keeps its input as an FP8 " +
            "cast (1 B an element instead of 2), as DeepSeek-V3 cached the MoE SwiGLU inputs (Sec. 3.3.3).",
        }),
        f("training.preference.reference", c.preference, {
          unit: "chosen + rejected: 2 sequences per example",
          help: "DPO as TRL runs it: the policy runs twice the sequences; the reference model is a " +
            "separate 16-bit copy, the base with LoRA switched off, or precomputed log-probs.",
        }),
      ),
      grid(
        f("training.flash_attention", c.flash, { unit: "no s × s scores kept" }),
        f("training.sequence_parallel", c.seqParallel, { unit: "with tensor parallel" }),
        f("training.loss_kernel", c.lossKernel, { unit: "logits memory" }),
      ),
      grid(
        f("training.lora.rank", c.loraRank, {
          unit: "r; blank = full fine-tuning",
          help: "LoRA (Hu et al. 2021): the base weights are frozen (no gradients, no optimizer states, no " +
            "weight-gradient GEMMs); each target matrix gets r × (d_in + d_out) trainable parameters.",
        }),
        f("training.lora.alpha", c.loraAlpha, { unit: "scale α/r; no effect on memory or time" }),
        f("training.lora.dropout", c.loraDropout, { unit: "0–1; > 0 keeps a copy of x per adapter" }),
        f("training.lora.targets", c.loraTargets, {
          unit: "q, k, v, o, gate, up, down, embeddings",
          help: "The matrices that get adapters, separated by commas. Blank = q, v.",
        }),
      ),
      grid(
        f("training.fp8.recipe", c.fp8Recipe, {
          unit: "FP8 GEMMs",
          help: "The projections' and MLP's GEMMs in FP8 (attention core and output head stay 16-bit): " +
            "Transformer Engine with the Megatron framework, torchao float8 otherwise. Needs FP8 tensor cores " +
            "(H100/H200/B200, MI300X, Ada).",
        }),
        f("training.fp8.format", c.fp8Format, { unit: "E4M3 / E5M2" }),
        f("training.fp8.amax_history_len", c.fp8History, { unit: "steps; delayed scaling only" }),
        f("training.fp8.param", c.fp8Param, { unit: "1-byte weights (--fp8-param-gather)" }),
        f("training.framework", c.framework, {
          unit: "whose modules: TE or torchao FP8",
          help: "Megatron-LM / Megatron-Core (Transformer Engine: delayed, tensorwise, blockwise, MXFP8 " +
            "recipes; fused kernels) or Hugging Face transformers (torchao float8: tensorwise, rowwise). " +
            "Blank = Megatron with tensor, pipeline, context, expert or sequence parallelism, transformers otherwise.",
        }),
      ),
      grid(
        f("training.lora.base_dtype", c.loraBase, {
          unit: "QLoRA: nf4 / fp4 / int8",
          help: "QLoRA (Dettmers et al. 2023): the frozen base's matrices stored in 4 bits (bitsandbytes " +
            "NF4 or FP4, an absmax per block) or 8 bits, dequantised to 16-bit for each matmul; " +
            "embeddings, head and norms stay unquantised (fp32 after PEFT's prepare_model_for_kbit_training).",
        }),
        f("training.lora.double_quant", c.loraDoubleQuant, { unit: "4-bit: 0.5 → 0.127 bits a weight" }),
        f("training.lora.quant_block_size", c.loraBlock, { unit: "weights per absmax (4-bit)" }),
        f("training.lora.adapter_dtype", c.loraAdapterDtype, { unit: "bf16: no fp32 master copy" }),
      ),
      grid(
        f("training.lora.implementation", c.loraImplementation, {
          unit: "whose forward: what it keeps",
          help: "PEFT casts each adapter's input to the fp32 adapters' dtype (a 16-bit copy per target); " +
            "NeMo AutoModel's LinearLoRA keeps bf16 adapters and no copy (lora_A keeps the tensor the base reads).",
        }),
        f("training.lora.dropout_position", c.loraDropoutPosition, { unit: "AutoModel: pre / post" }),
      ),
    ),
    h(
      "fieldset",
      null,
      h("legend", null, h("strong", null, "Parallelism and sharding")),
      grid(
        f("strategy.kind", c.kind, { unit: "sharding over data-parallel GPUs" }),
        shardGroupField,
      ),
      grid(
        f("strategy.offload_optimizer", c.offloadOpt, { unit: "memory tier" }),
        f("strategy.offload_params", c.offloadParams, { unit: "memory tier" }),
      ),
      grid(
        f("training.tensor_parallel", c.tp, { unit: "GPUs per group" }),
        f("training.pipeline_parallel", c.pp, { unit: "pipeline stages" }),
        f("training.expert_parallel", c.ep, {
          unit: "GPUs per expert group (MoE)",
          help: "Megatron --expert-model-parallel-size: each MoE layer's experts spread over this many " +
            "data-parallel GPUs (experts / EP each), tokens sent to them by all-to-all. Blank = 1.",
        }),
      ),
      grid(
        f("training.moe_capacity_factor", c.capacity, {
          unit: "× mean tokens per expert",
          help: "Megatron --moe-expert-capacity-factor: an expert takes at most this many times its share of " +
            "the tokens and drops the rest. Blank = dropless.",
        }),
        f("training.moe_routing_imbalance", c.imbalance, {
          unit: "busiest GPU ÷ mean, ≥ 1",
          help: "Tokens the busiest expert-parallel GPU receives over the mean: it paces every all-to-all " +
            "and its expert GEMMs. Blank = 1 (balanced routing).",
        }),
        f("training.moe_a2a_overlap", c.a2aOverlap, {
          unit: "all-to-all beside compute",
          help: "Megatron --overlap-moe-expert-parallel-comm: the dispatch and combine run beside another " +
            "micro-batch's compute instead of on the critical path.",
        }),
        f("training.moe_router_group_topk", c.groupTopk, {
          unit: "nodes, ≤ the nodes the EP group spans",
          help: "Megatron --moe-router-group-topk with --moe-router-num-groups = the EP group's nodes " +
            "(DeepSeek-V3: 4): each token goes to experts on at most this many nodes, crossing the " +
            "network once per node and forwarded over NVLink there. Blank = not limited.",
        }),
      ),
      grid(
        f("training.context_parallel", c.cp, {
          unit: "ranks per sequence",
          help: "Context parallelism (ring attention): each rank holds seq_len / CP tokens; needs flash attention and seq_len a multiple of 2 x CP.",
        }),
        f("training.context_parallel_comm", c.cpComm, { unit: "Megatron --cp-comm-type" }),
      ),
      grid(
        f("training.first_pipeline_layers", c.ppFirst, {
          unit: "layers",
          help: "Megatron --decoder-first-pipeline-num-layers: the rest split evenly over the other stages.",
        }),
        f("training.last_pipeline_layers", c.ppLast, {
          unit: "layers",
          help: "Megatron --decoder-last-pipeline-num-layers (Llama 3 405B: 7 on the first and last of 16).",
        }),
      ),
      grid(
        f("training.pipeline_layers", c.ppLayers, {
          unit: "one count per stage",
          help: "An explicit split, e.g. 7, 8*14, 7 (Megatron --pipeline-model-parallel-layout). " +
            "It must add up to the model's layers.",
        }),
        f("training.pipeline_schedule", c.ppSchedule, {
          unit: "with pipeline parallel",
          help: "DualPipe holds stages i and p-1-i on each GPU: twice the parameters, p+1 micro-batches " +
            "of activations, a smaller bubble.",
        }),
      ),
    ),
    h(
      "fieldset",
      { id: "checkpoint-fieldset" },
      h("legend", null, h("strong", null, "Checkpoint")),
      grid(
        f("checkpoint.target", c.ckTarget, { unit: "where it is written" }),
        f("checkpoint.method", c.ckMethod, { unit: "how the step waits" }),
      ),
      grid(
        f("checkpoint.content", c.ckContent, { unit: "what is saved" }),
        f("checkpoint.quantize_bits", c.ckQuantize, { unit: "bits per fp32 value" }),
      ),
      grid(
        f("checkpoint.interval_s", c.ckInterval, {
          unit: "s; blank = optimal",
          help: "Blank = Daly's optimum from the checkpoint cost and the MTBF; 3600 = every hour.",
        }),
        f("checkpoint.differential_fraction", c.ckDiff, {
          unit: "share saved, 0–1",
          help: "Blank = 1: every checkpoint is full.",
        }),
      ),
      grid(
        f("checkpoint.gpu_failure_rate_per_hour", c.ckRate, {
          unit: "failures per GPU-hour",
          help: "Give this or the MTBF. Blank = Llama 3's 1.97e-5 (419 interruptions in 54 days on 16,384 GPUs).",
        }),
        f("checkpoint.mtbf_s", c.ckMtbf, {
          unit: "s, whole job",
          help: "Mean time between failures of the whole job; 86400 = one a day.",
        }),
      ),
      f("checkpoint.sharded", c.ckSharded, { unit: "every rank writes its shard" }),
    ),
    advanced,
    h(
      "fieldset",
      null,
      h("legend", null, h("strong", null, "Accounting")),
      f("convention", c.convention, { unit: "which bytes per parameter count" }),
    ),
    estimate,
    submit,
  );

  replaceChildren(root, errorSummary, form);

  const controls = (): Control[] =>
    Array.from(form.querySelectorAll<Control>("input[name], select[name]")).filter((el) => el.name !== "example");

  // ------------------------------------------------------------------ values
  const readValues = (): FormValues => {
    const v: FormValues = {};
    for (const el of controls()) {
      v[el.name] = el instanceof HTMLInputElement && el.type === "checkbox" ? el.checked : el.value;
    }
    return v;
  };

  const writeValues = (values: FormValues) => {
    for (const el of controls()) {
      const v = values[el.name];
      if (v === undefined) continue;
      if (el instanceof HTMLInputElement && el.type === "checkbox") el.checked = v === true;
      else el.value = String(v);
    }
    if (hasAdvancedValues(values)) advanced.open = true;
    syncFailureInputs();
    rs.sync();
  };

  /** The failure rate and the MTBF exclude each other: filling one disables the other. */
  const syncFailureInputs = () => {
    c.ckMtbf.disabled = c.ckRate.value.trim() !== "";
    c.ckRate.disabled = !c.ckMtbf.disabled && c.ckMtbf.value.trim() !== "";
  };

  // ------------------------------------------------------------------ dependent inputs
  const currentNode = () => nodes.find((n) => n.slug === c.node.value);

  const syncOffloadLabels = () => {
    const tiers = nodeTiers(currentNode());
    rs.syncNode(currentNode() ? tiers : null);
    const have: Record<string, boolean> = { none: true, cpu: tiers.includes("ddr"), nvme: tiers.includes("nvme"), cxl: tiers.includes("cxl") };
    const label = ([v, text]: [string, string]): [string, string] => [v, have[v] || !currentNode() ? text : `${text} (not on this node)`];
    fillSelect(c.offloadOpt, OFFLOAD_TARGETS.map(label));
    fillSelect(c.offloadParams, OFFLOAD_TARGETS.map(label));
    syncHost();
  };

  /** The host CPU inputs show the node template's figures they stand for when blank. */
  const syncHost = () => {
    const spec = (currentNode()?.spec ?? {}) as Record<string, unknown>;
    const cores = typeof spec.cpu_cores === "number" ? spec.cpu_cores : null;
    c.cpuCores.placeholder = cores !== null ? `${cores} (the node template's)` : PLACEHOLDERS["cluster.cpu_cores"];
    const domain = typeof spec.nvlink_domain_gpus === "number" ? spec.nvlink_domain_gpus : null;
    c.nvlinkDomain.placeholder = domain !== null ? `${domain} (the node template's)` : PLACEHOLDERS["cluster.nvlink_domain_gpus"];
    const isa = typeof spec.cpu_isa === "string" ? CPU_ISAS.find(([v]) => v === spec.cpu_isa)?.[1] ?? spec.cpu_isa : null;
    fillSelect(c.cpuIsa, CPU_ISAS.map(([v, text]): [string, string] => [v, v === "" && isa ? `the node template's: ${isa}` : text]));
  };

  const syncStrategy = (changed: boolean) => {
    const kind = c.kind.value;
    if (changed) {
      const next = offloadAfterStrategyChange(kind, { optimizer: c.offloadOpt.value, params: c.offloadParams.value });
      c.offloadOpt.value = next.optimizer;
      c.offloadParams.value = next.params;
    }
    const rules = offloadRules(kind);
    c.offloadOpt.disabled = !rules.optimizer;
    c.offloadParams.disabled = !rules.params;
    // options of one framework's strategy only: off (and greyed) with another
    c.dsRelease.disabled = !DEEPSPEED_ZERO3.has(kind);
    if (c.dsRelease.disabled) c.dsRelease.value = "current";
    c.fsdpVersion.disabled = !FSDP_KINDS.has(kind);
    if (c.fsdpVersion.disabled) c.fsdpVersion.value = "1";
    c.overlapParamGather.disabled = kind !== "megatron_dist_opt";
    if (c.overlapParamGather.disabled) c.overlapParamGather.checked = false;
    const hybrid = kind === "fsdp_hybrid_shard";
    shardGroupField.hidden = !hybrid;
    c.shardGroup.required = hybrid;
    if (hybrid && !c.shardGroup.value) c.shardGroup.value = c.gpus.value;
  };

  const syncName = () => {
    const inline = base?.model as Record<string, unknown> | undefined;
    const customName = typeof inline?.name === "string" ? inline.name : undefined;
    if (!nameTouched) c.name.value = suggestName(readValues(), models, nodes, customName);
  };

  // ------------------------------------------------------------------ errors
  const clearErrors = () => {
    errorSummary.hidden = true;
    errorSummary.replaceChildren();
    for (const el of form.querySelectorAll<HTMLElement>("[aria-invalid]")) el.removeAttribute("aria-invalid");
    for (const el of form.querySelectorAll<HTMLElement>(".field-error")) {
      el.hidden = true;
      el.textContent = "";
    }
    for (const el of controls()) restoreDescribedBy(el);
  };

  const restoreDescribedBy = (el: Control) => {
    const help = document.getElementById(`${el.id}-help`);
    if (help) el.setAttribute("aria-describedby", help.id);
    else el.removeAttribute("aria-describedby");
  };

  const clearFieldError = (el: Control) => {
    if (!el.hasAttribute("aria-invalid")) return;
    el.removeAttribute("aria-invalid");
    const err = document.getElementById(`${el.id}-error`);
    if (err) {
      err.hidden = true;
      err.textContent = "";
    }
    restoreDescribedBy(el);
  };

  /** The input an error key names, if the form has one. */
  const controlFor = (key: string): Control | null => {
    const name = inputNameForErrorKey(key);
    return name ? form.querySelector<Control>(`[name="${CSS.escape(name)}"]`) : null;
  };

  /** Mark one input invalid with its messages next to it. */
  const markField = (el: Control, messages: string[]) => {
    el.setAttribute("aria-invalid", "true");
    const err = document.getElementById(`${el.id}-error`);
    if (err) {
      err.textContent = messages.join(" ");
      err.hidden = false;
      const help = document.getElementById(`${el.id}-help`);
      el.setAttribute("aria-describedby", [err.id, help?.id].filter(Boolean).join(" "));
    }
    // A hidden field (shard group) is shown when it is at fault, a closed section opened.
    el.closest<HTMLElement>(".field")?.removeAttribute("hidden");
    const details = el.closest("details");
    if (details) details.open = true;
  };

  const showErrors = (errors: FieldErrors, heading = "The scenario was not saved") => {
    clearErrors();
    const items: HTMLElement[] = [];
    for (const [key, messages] of Object.entries(errors)) {
      const name = inputNameForErrorKey(key);
      const el = controlFor(key);
      const label = FIELD_LABELS[name] ?? (key ? key.replace(/^scenario\./, "") : "");
      if (el) markField(el, messages);
      for (const message of messages) {
        const text = label ? `${label}: ${message}` : message;
        items.push(
          h("li", null, el
            ? h("a", { href: `#${el.id}`, onclick: ((e: Event) => { e.preventDefault(); el.focus(); }) as EventListener }, text)
            : text),
        );
      }
    }
    if (!items.length) items.push(h("li", null, "Unknown error"));
    errorSummary.append(h("strong", null, heading), h("ul", null, items));
    errorSummary.hidden = false;
    errorSummary.focus();
  };

  const errorsOf = (err: unknown): FieldErrors => {
    if (err instanceof ApiError) {
      if (err.status === 403 || err.status === 401) {
        return { "": [`${err.message} — log in at /accounts/login/ and try again.`] };
      }
      return Object.keys(err.fieldErrors).length ? err.fieldErrors : { "": [err.message] };
    }
    return { "": [err instanceof Error ? err.message : String(err)] };
  };

  // ------------------------------------------------------------------ live estimate
  let estimateTimer = 0;
  let estimateAbort: AbortController | null = null;
  let estimateAvailable = true;

  /** Inputs the live estimate marked (not those a failed save marked). */
  const clearLiveFieldErrors = () => {
    for (const el of controls()) {
      if (el.dataset.liveError) {
        delete el.dataset.liveError;
        clearFieldError(el);
      }
    }
  };

  const runEstimate = async () => {
    if (!estimateAvailable || !models.length || !nodes.length) return;
    estimateAbort?.abort();
    const abort = new AbortController();
    estimateAbort = abort;
    estimate.setAttribute("aria-busy", "true");
    // an empty required number would silently take the engine's default: ask for it instead
    const missing = controls().filter((el) => el.required && el.name !== "name" && !el.disabled &&
      !el.closest("[hidden]") && el.value.trim() === "");
    if (missing.length) {
      clearLiveFieldErrors();
      for (const el of missing) {
        markField(el, ["Required."]);
        el.dataset.liveError = "true";
      }
      estimate.dataset.fits = "error";
      replaceChildren(estimate, h("p", { id: "estimate-missing" }, "Live estimate waits for: ",
        missing.map((el) => FIELD_LABELS[el.name] ?? el.name).join(", "), "."));
      estimate.removeAttribute("aria-busy");
      return;
    }
    const { scenario } = buildRequest(readValues(), base);
    try {
      // With the simulated step and checkpoints; memory only when that is more work than a
      // request may do (413), saying so.
      const report = await postJSON<Report & { step_skipped?: unknown }>(
        endpoints.estimate, { scenario, include_step: true, step_if_within_limit: true }, abort.signal);
      const stepLine = report.step_skipped
        ? "Step time and checkpoints: too much to simulate while you type; save the scenario and run it."
        : estimateStepSummary(report);
      if (abort.signal.aborted) return;
      clearLiveFieldErrors();
      estimate.dataset.fits = String(report.fits);
      estimate.dataset.fitState = report.fit_state ?? (report.fits ? "fits" : "does_not_fit");
      const params = report.model?.num_params;
      replaceChildren(
        estimate,
        h("p", null, h("strong", null, report.fit_state === "tight" ? "⚠ " : report.fits ? "✓ " : "✗ "), "Live estimate: ", h("strong", { id: "estimate-summary" }, estimateSummary(report))),
        stepLine ? h("p", { id: "estimate-step" }, stepLine) : null,
        params ? h("p", null, h("small", null, `${report.model?.name ?? "Model"}: ${formatParams(params)}` +
          (report.model && trainableLine(report.model) ? `; ${trainableLine(report.model)}.` : "."))) : null,
        (report.violations ?? []).length > 1
          ? h("ul", null, (report.violations ?? []).map((v) => h("li", null, v.message)))
          : null,
        notesDetails(report.notes ?? []),
      );
    } catch (err) {
      if (abort.signal.aborted) return;
      delete estimate.dataset.fits;
      delete estimate.dataset.fitState;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        estimateAvailable = false;
        estimate.hidden = true;
        return;
      }
      if (err instanceof ApiError && err.status === 413 && Object.keys(err.fieldErrors).some((k) => k.startsWith("scenario"))) {
        // valid, but more work than a request may do: nothing to correct, it runs on the worker
        clearLiveFieldErrors();
        estimate.dataset.fits = "too-much";
        replaceChildren(estimate,
          h("p", { id: "estimate-too-much" }, "Live estimate: too much to compute while you type. ",
            "Save the scenario and run it: the worker evaluates it."),
          h("p", null, h("small", null, Object.values(err.fieldErrors).flat()[0] ?? err.message)));
        return;
      }
      const errors = errorsOf(err);
      clearLiveFieldErrors();
      for (const [key, msgs] of Object.entries(errors)) {
        const el = controlFor(key);            // shown next to the input too, not only here
        if (el) {
          markField(el, msgs);
          el.dataset.liveError = "true";
        }
      }
      const lines = Object.entries(errors).flatMap(([key, msgs]) => {
        const name = inputNameForErrorKey(key);
        const label = FIELD_LABELS[name] ?? key.replace(/^scenario\./, "");
        return msgs.map((m) => (label ? `${label}: ${m}` : m));
      });
      replaceChildren(estimate, h("p", null, "Live estimate unavailable — check the inputs:"), h("ul", null, lines.map((l) => h("li", null, l))));
      estimate.dataset.fits = "error";
    } finally {
      if (estimateAbort === abort) estimate.removeAttribute("aria-busy");
    }
  };

  const scheduleEstimate = () => {
    window.clearTimeout(estimateTimer);
    estimateTimer = window.setTimeout(runEstimate, 500);
  };

  // ------------------------------------------------------------------ events
  form.addEventListener("input", (e) => {
    const el = e.target as Control;
    if (el === c.name) nameTouched = c.name.value.trim() !== "";
    if (el === c.ckRate || el === c.ckMtbf) syncFailureInputs();
    clearFieldError(el);
  });
  form.addEventListener("change", (e) => {
    const el = e.target as Control;
    if (el === exampleSelect) return;
    if (el === c.node) {
      const gpus = nodeGpus(currentNode());
      if (gpus !== null) c.gpus.value = String(gpus);
      syncOffloadLabels();
    }
    if (el === c.kind) syncStrategy(true);
    if (el !== c.name) syncName();
    scheduleEstimate();
  });
  form.addEventListener("input", (e) => {
    // numbers and the list inputs re-estimate while typed (the name does not): a list cleared
    // without leaving the input must not keep the error its last value gave
    const el = e.target as Control;
    if (el.type === "number" || el === c.loraTargets || el === c.ppLayers || el === c.recomputeModules) {
      scheduleEstimate();
    }
  });

  exampleSelect.addEventListener("change", () => {
    const ex = examples[Number(exampleSelect.value)];
    if (!exampleSelect.value || !ex) {
      base = null;
      c.model.querySelector('option[data-imported]')?.remove();
      syncModelRequired();
      exampleNote.textContent = "Fills every input below; you can change any of them.";
      return;
    }
    base = ex.scenario;
    c.model.querySelector('option[data-imported]')?.remove();    // the example's model replaces it
    syncModelRequired();
    const values = valuesFromScenario(ex.scenario, ex.name);
    ensureModelOption(String(values["model.preset"]));
    clearErrors();
    writeValues(values);
    const exCluster = ex.scenario.cluster as Record<string, unknown> | undefined;
    if (exCluster?.gpus_per_node === undefined) {
      const gpus = nodeGpus(currentNode());
      if (gpus !== null) c.gpus.value = String(gpus);
    }
    syncOffloadLabels();
    syncStrategy(false);
    nameTouched = true;
    const extra = settingsNotOnForm(ex.scenario);
    exampleNote.textContent = extra.length
      ? `Filled from “${ex.name}”. Also kept from it (no input here): ${extra.join(", ")}.`
      : `Filled from “${ex.name}”.`;
    scheduleEstimate();
  });

  hfFile.addEventListener("change", async () => {
    const file = hfFile.files?.[0];
    if (file) hfText.value = await file.text();
  });
  hfButton.addEventListener("click", async () => {
    const request = hfConfigRequest(hfText.value);
    if ("error" in request) {
      replaceChildren(hfResult, h("p", { class: "field-error" }, request.error));
      return;
    }
    hfButton.setAttribute("aria-busy", "true");
    try {
      const r = await postJSON<HfImport>(endpoints.modelFromHfConfig, request);
      base = withImportedModel(base, r.model);
      c.model.querySelector('option[value=""]')?.remove();
      c.model.prepend(h("option", { value: "", "data-imported": "true" }, importedModelLabel(r.model)));
      c.model.value = "";
      c.positionEmbedding.value = typeof r.model.position_embedding === "string" ? r.model.position_embedding : "";
      syncModelRequired();
      clearFieldError(c.model);
      replaceChildren(hfResult, h("ul", { id: "hf-config-summary" }, importSummary(r).map((l) => h("li", null, l))));
      syncName();
      scheduleEstimate();
    } catch (err) {
      const lines = hfConfigErrorLines(errorsOf(err));
      replaceChildren(hfResult, h("p", { class: "field-error" }, "This config.json could not be imported:"),
        h("ul", { id: "hf-config-errors" }, lines.map((l) => h("li", null, l))));
    } finally {
      hfButton.removeAttribute("aria-busy");
    }
  });

  /** The model list's blank entry is a model (not "none chosen") while the example or an
   * import holds an inline one: then the list is not required (a browser would refuse the
   * form, and the live estimate would wait for a model). */
  const syncModelRequired = () => {
    const m = base?.model;
    c.model.required = !(m && typeof m === "object" && typeof (m as Record<string, unknown>).preset !== "string");
  };

  /** An example with an inline (non-preset) model gets a "custom" entry in the model list. */
  const ensureModelOption = (preset: string) => {
    if (preset === "" && !c.model.querySelector('option[value=""]')) {
      const name = typeof (base?.model as Record<string, unknown>)?.name === "string"
        ? String((base?.model as Record<string, unknown>).name) : "custom";
      c.model.prepend(h("option", { value: "" }, `${name} (custom model from the example)`));
    }
  };

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearErrors();
    const request = buildRequest(readValues(), base);
    submit.setAttribute("aria-busy", "true");
    submit.disabled = true;
    try {
      const scenario = await postJSON<{ id: number | string }>(endpoints.scenarios, request);
      try {
        const run = await postJSON<Run>(endpoints.scenarioRuns(scenario.id), {});
        window.location.assign(endpoints.runPage(run.id));
        return;
      } catch (err) {
        showErrors(errorsOf(err), "The scenario was saved but its run could not be started");
      }
    } catch (err) {
      showErrors(errorsOf(err));
    }
    submit.removeAttribute("aria-busy");
    submit.disabled = false;
  });

  // ------------------------------------------------------------------ start
  writeValues(DEFAULT_VALUES);
  syncStrategy(false);
  c.model.disabled = true;
  c.node.disabled = true;

  Promise.all([listCatalog(endpoints.models), listCatalog(endpoints.nodes)])
    .then(([m, n]) => {
      models = m;
      nodes = n;
      fillSelect(c.model, models.map((x) => [x.slug, modelOptionLabel(x)]), String(DEFAULT_VALUES["model.preset"]));
      fillSelect(c.node, nodes.map((x) => [x.slug, nodeOptionLabel(x)]), String(DEFAULT_VALUES["cluster.node"]));
      c.model.disabled = false;
      c.node.disabled = false;
      const gpus = nodeGpus(currentNode());
      if (gpus !== null) c.gpus.value = String(gpus);
      syncOffloadLabels();
      syncStrategy(false);
      syncName();
      root.dataset.ready = "true";
      scheduleEstimate();
    })
    .catch((err) => {
      showErrors(errorsOf(err), "Could not load the model and node catalog");
    });
  // Cluster profiles (yours and your team's); the form works without them.
  getList<ClusterProfileEntry>(endpoints.clusterProfiles)
    .then((profiles) => {
      const chosen = c.profile.value;
      for (const p of profiles) c.profile.append(h("option", { value: String(p.id) }, profileOptionLabel(p)));
      if (chosen) c.profile.value = chosen;
      c.profile.dataset.loaded = "true";
    })
    .catch(() => {
      c.profile.dataset.loaded = "false";
    });
}

/** "Selene (A100) — compute 63 %, network 86 %": a profile's name and its fitted figures. */
function profileOptionLabel(p: ClusterProfileEntry): string {
  const f = p.figures ?? {};
  const pct = (v: unknown) => (typeof v === "number" ? `${Math.round(v * 100)} %` : null);
  const parts = [
    pct(f.compute_efficiency) && `compute ${pct(f.compute_efficiency)}`,
    pct(f.network_efficiency) && `network ${pct(f.network_efficiency)}`,
    typeof f.gemm_flops === "number" && `GEMM ${(f.gemm_flops / 1e12).toFixed(0)} TFLOP/s`,
  ].filter(Boolean);
  const on = typeof f.accelerator === "string" ? ` (${f.accelerator})` : "";
  return `${p.name}${on}${parts.length ? " — " + parts.join(", ") : ""}`;
}

const root = document.getElementById("scenario-form-root");
if (root) mount(root);

/** The engine's notes on the estimate, folded to one line (the estimate box stays small). */
function notesDetails(notes: readonly string[]): HTMLElement | null {
  if (!notes.length) return null;
  return h("details", { id: "estimate-notes", class: "estimate-notes" },
    h("summary", null, estimateNotesSummary(notes)),
    h("ul", null, notes.map((n) => h("li", null, n))));
}
