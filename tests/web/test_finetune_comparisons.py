"""Issue #14's comparison through the API: Llama-3.1-8B fine-tuned in full, with LoRA and
with QLoRA, on one 24 GB RTX 4090 and on one 80 GB H100: memory per part and step time
side by side (the browser shows the same table: tests/browser/test_finetune_comparison.py)."""

import pytest

from tests.web.test_pretraining_comparisons import compare, rows

pytestmark = pytest.mark.django_db

CARDS = {"RTX 4090": {"node": "rtx4090-workstation"},
         "H100": {"node": "dgx-h100", "gpus_per_node": 1}}
LORA = {"rank": 16, "alpha": 32, "targets": ["q", "k", "v", "o", "gate", "up", "down"]}


def llama8b(card: str, method: str) -> dict:
    # one GPU (DDP of one), sequences of 2,048 tokens, gradient checkpointing, flash attention
    training = {"micro_batch_size": 1, "seq_len": 2048, "recompute": "full", "flash_attention": True}
    if method == "lora":
        training["lora"] = dict(LORA)
    elif method == "qlora":      # 4-bit NF4 base, double-quantised; paged 8-bit AdamW
        training["lora"] = dict(LORA, base_dtype="nf4", double_quant=True)
        training["optimizer"] = "paged_adamw_8bit"
    return {"model": {"preset": "llama3.1-8b"}, "cluster": dict(CARDS[card], num_nodes=1),
            "training": training, "strategy": {"kind": "ddp"}}


@pytest.mark.parametrize("card", list(CARDS))
def test_full_vs_lora_vs_qlora_of_llama_3_1_8b_on_one_card(owner_api, card):
    body = compare(owner_api, {f"{card} {m}": llama8b(card, m) for m in ("full", "lora", "qlora")})
    out = rows(body, "outputs")
    params = out["memory.per_gpu.hbm.params_bytes"]["values"]
    grads = out["memory.per_gpu.hbm.grads_bytes"]["values"]
    opt = out["memory.per_gpu.hbm.optimizer_bytes"]["values"]
    fits = [state != "does_not_fit" for state in out["fit_state"]["values"]]
    # full fine-tuning keeps 16-bit weights, gradients and fp32 Adam states of 8.03 B
    # parameters (>= 16 B each, 128 GB): it fits neither card
    assert fits[0] is False
    assert params[0] + grads[0] + opt[0] >= 16 * 8.0e9
    # LoRA: the base frozen in bf16 (2 B x 8.03 B = 16 GB), states for the adapters only
    assert 2 * 8.0e9 <= params[1] < 2 * 8.1e9 + 1e9
    assert grads[1] < 0.01 * grads[0] and opt[1] < 0.01 * opt[0]
    # QLoRA: the base in 4 bits (0.5 B + constants for the blocks' matrices, the 1 GB
    # embedding and 1 GB head unquantised): well under half of LoRA's
    assert params[2] < 0.5 * params[1]
    assert fits[2] is True
    # dequantising every matrix twice a layer costs step time
    step = out["step.time_s"]["values"]
    assert step[2] > step[1]
    if card == "H100":
        assert fits[1] is True
