"""A Hugging Face model as your own workload (README, "Add a workload"): a factory from the
library's config class, random weights, no download, and inputs by keyword.

    python -m study.run -m variant=custom variant.target=examples.hf_gpt2.gpt2 \\
        variant.inputs=examples.hf_gpt2.inputs shape.batch=2 shape.seq_len=32 shape.dim=64 \\
        shape.heads=2 tolerance_rule=eager compile=off,default pass=fwd,fwd_bwd
"""

import torch
import transformers


def gpt2(dim: int, heads: int, layers: int = 2):  # shape keys from the config, layers from kwargs
    cfg = transformers.GPT2Config(n_embd=dim, n_head=heads, n_layer=layers, use_cache=False)
    return transformers.GPT2Model(cfg)


def inputs(batch: int, seq_len: int, *, device, gen):
    ids = torch.randint(0, 256, (batch, seq_len), generator=gen, device=device)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
