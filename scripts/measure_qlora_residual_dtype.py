"""Dtype of the residual stream (the checkpointed layer inputs) in the standard QLoRA recipe.

PEFT ``prepare_model_for_kbit_training`` casts every parameter that is not quantised
(embeddings, norms, head) from 16-bit to fp32; bitsandbytes ``Linear4bit.forward`` casts its
output back to the input's dtype (``out.to(inp_dtype)``). So the embedding lookup gives fp32,
``residual + branch`` stays fp32 and every decoder layer's input (what gradient
checkpointing keeps) is fp32: 4 bytes x hidden a token a layer, not 2.

CPU stand-in (bitsandbytes needs CUDA): a tiny Llama in bf16 whose non-Linear parameters
are cast to fp32 as PEFT does, run under bf16 autocast; prints each layer input's dtype.
Run: PYTHONPATH=. python scripts/measure_qlora_residual_dtype.py
"""
import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4)
model = LlamaForCausalLM(cfg).to(torch.bfloat16)
for name, p in model.named_parameters():
    if not isinstance(dict(model.named_modules())[name.rsplit(".", 1)[0]], torch.nn.Linear) \
            or "lm_head" in name:
        p.data = p.data.float()          # PEFT prepare_model_for_kbit_training
seen = []
for layer in model.model.layers:
    layer.register_forward_pre_hook(lambda m, a, kw=None: seen.append(str(a[0].dtype)))
ids = torch.randint(0, 256, (1, 16))
with torch.autocast("cpu", dtype=torch.bfloat16):
    out = model(input_ids=ids, labels=ids)
print({"transformers": transformers.__version__, "torch": torch.__version__,
       "layer_input_dtypes": seen, "logits_dtype": str(out.logits.dtype)})
