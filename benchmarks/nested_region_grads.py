"""Does ``torch.compiler.nested_compile_region`` give GPT-2 the right gradients on this torch?
Prints each parameter whose gradient is off; asserts nothing.

    python benchmarks/nested_region_grads.py                     # Inductor, 2 layers, CPU
    python benchmarks/nested_region_grads.py --backend aot_eager --layers 1
    python benchmarks/nested_region_grads.py --device cuda       # the GPU machine's torch

GPT-2 (transformers' ``GPT2Model``, small: width 64, 4 heads, vocabulary 128) in float64, its
block's forward made a nested region, the whole model under ``torch.compile``; one forward and
backward against the same model eager. ``compile.regional_how=auto`` takes per-block compiles
for training passes because of what this prints (study/cell/regional.py): run it on a new torch
before letting ``auto`` choose the nested region for training.

On torch 2.13.0+cpu (2026-12-05, CPU box): with Inductor, 21 of 28 parameters' gradients are off
at 2 layers and 33 of 40 at 3, by 14x to 4,000x (relative), while the output matches to 1e-15:
nearly every parameter upstream of the last block's MLP (the final norm and that MLP match).
With 1 layer (the region used once), or under ``aot_eager``, every gradient matches; ``--backend eager``
fails in the backward ("fake_mode should be enabled for HOPs"). The block ladder's and BERT's
blocks, and a GPT-2-like block built from the same Conv1D, LayerNorm, GELU and causal SDPA,
match under Inductor: it is something of GPT-2's block as transformers writes it.
"""

from __future__ import annotations

import argparse
import copy

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="inductor", help="inductor, aot_eager or eager")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    if not hasattr(torch.compiler, "nested_compile_region"):
        print(f"torch {torch.__version__} has no torch.compiler.nested_compile_region")
        return
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers, n_embd=64, n_head=4, vocab_size=128, n_positions=64,
                     bos_token_id=0, eos_token_id=0, attn_implementation="sdpa",
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)  # fmt: skip
    eager = GPT2Model(cfg).double().to(a.device).eval()
    ids = torch.randint(0, 128, (2, 16), device=a.device)

    def grads(model, fn):
        model.zero_grad(set_to_none=True)
        out = fn(ids).last_hidden_state
        w = torch.linspace(-1, 1, out.numel(), dtype=out.dtype, device=out.device)
        (out * w.view_as(out)).sum().backward()
        return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}, out.detach()

    want, want_out = grads(eager, lambda x: eager(x, use_cache=False))
    model = copy.deepcopy(eager)
    block = type(model.h[0])
    block.forward = torch.compiler.nested_compile_region(block.forward)
    compiled = torch.compile(model, backend=a.backend)
    print(f"torch {torch.__version__}, {a.device}, backend {a.backend}, {a.layers} layer(s), "
          "float64")  # fmt: skip
    try:
        got, out = grads(model, lambda x: compiled(x, use_cache=False))
    except Exception as e:  # a backend that cannot run it is a finding, not a crash
        print(f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        return
    print(f"output: max abs error {(out - want_out).abs().max().item():.3g}")
    off = []
    for n, g in want.items():
        if n not in got:
            off.append((float("inf"), n, "no gradient"))
            continue
        err = ((got[n] - g).abs().max() / g.abs().max().clamp_min(1e-30)).item()
        if err > 1e-6:
            off.append(
                (err, n, f"{err:.3g} relative, norm x{(got[n].norm() / g.norm()).item():.3g}")
            )
    for _, n, said in sorted(off, reverse=True):
        print(f"  {n}: {said}")
    print(f"{len(off)} of {len(want)} parameters' gradients off by more than 1e-6 (relative)")


if __name__ == "__main__":
    main()
