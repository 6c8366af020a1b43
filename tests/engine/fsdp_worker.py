"""One rank of the exported FSDP snippet on CPU (gloo), started by torchrun from
tests/engine/test_fsdp_snippet_runs.py: wraps a tiny transformer with the snippet's
``wrap``, trains a few steps and writes what it saw to ``<out>/rank<r>.json``.

Usage: python -m torch.distributed.run --standalone --nproc-per-node=2 fsdp_worker.py SNIPPET OUT
"""

import importlib.util
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

VOCAB, HIDDEN, HEADS, LAYERS, SEQ = 64, 32, 4, 3, 8


class Block(nn.Module):
    """A pre-norm transformer block (attention + MLP), the unit FSDP shards."""

    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.attn = nn.MultiheadAttention(HIDDEN, HEADS, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))

    def forward(self, x):
        h = self.norm1(x)
        mask = torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), diagonal=1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main(snippet_path: str, out_dir: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    spec = importlib.util.spec_from_file_location("tierlab_fsdp", snippet_path)
    snippet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(snippet)

    torch.manual_seed(0)
    model = snippet.wrap(TinyLM(), Block, device=torch.device("cpu"))

    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    fsdp2 = isinstance(model, FSDPModule)           # fully_shard (FSDP2) rather than FSDP1
    units = [m for m in model.modules() if isinstance(m, FSDPModule)] if fsdp2 else FSDP.fsdp_modules(model)
    nested = [u for u in units if u is not model]
    in_units = {id(p) for u in nested for p in u.parameters()}
    root_params = sorted(n.replace("_fsdp_wrapped_module.", "").replace("_checkpoint_wrapped_module.", "")
                         for n, p in model.named_parameters() if id(p) not in in_units)
    compute_dtypes = set()
    for m in model.modules():
        if isinstance(m, nn.Linear):
            m.register_forward_hook(lambda mod, inp, out: compute_dtypes.add(str(out.dtype)))

    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = [p.detach().clone() for p in model.parameters()]
    losses = []
    gen = torch.Generator().manual_seed(rank)
    for _ in range(2):                                  # optimizer steps
        for _ in range(snippet.GRAD_ACCUMULATION_STEPS):
            tokens = torch.randint(0, VOCAB, (snippet.MICRO_BATCH_SIZE, SEQ + 1), generator=gen)
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(logits.float().reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
            (loss / snippet.GRAD_ACCUMULATION_STEPS).backward()
            losses.append(loss.item())
        opt.step()
        opt.zero_grad()
    changed = any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))

    result = {
        "world_size": dist.get_world_size(),
        "sharding_strategy": ("fully_shard" if fsdp2 else model.sharding_strategy.name),
        "units": len(units),
        "block_units": (sum(isinstance(u, Block) for u in nested) if fsdp2 else
                        sum(isinstance(u.module, Block) or
                            isinstance(getattr(u.module, "_checkpoint_wrapped_module", None), Block)
                            for u in nested)),
        "checkpointed": [type(m._checkpoint_wrapped_module).__name__ for m in model.modules()
                         if isinstance(m, CheckpointWrapper)],
        "root_params": root_params,
        "shard_dtypes": sorted({str(p.dtype) for p in model.parameters()}),
        "dtensor_params": all(type(p).__name__ == "DTensor" for p in model.parameters()),
        "compute_dtypes": sorted(compute_dtypes),
        "losses": losses,
        "changed": changed,
    }
    with open(f"{out_dir}/rank{rank}.json", "w") as f:
        json.dump(result, f)
    # both ranks reach the end, then leave without tearing gloo down: a rank that destroys
    # its group, or whose interpreter exit runs gloo's thread destructors, while the other
    # is still in a collective aborts ("terminate called without an active exception", exit
    # -6): seen about one run in ten with destroy_process_group after the barrier too. Both
    # results are written before the barrier; os._exit skips only the teardown.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
