"""A curated model zoo: Hugging Face, timm and torchvision models from their config classes,
random weights, no download (``conf/variant/{gpt2,bert,vit,resnet50}.yaml``).

Each is "your own workload" (study.workloads.custom) with a YAML of its sizes, so ``shape.*``
and ``+variant.kwargs.*`` reach it. Sizes by shape key: ``dim`` (hidden size), ``heads``,
``hidden`` (the MLP's width), ``seq_len`` and ``batch``; the vision models take ``n`` as the
image side in pixels. Layers and the rest are keyword arguments (``+variant.kwargs.layers=4``).

The libraries are optional (``pip install -e ".[models]"``). A model whose library is missing,
or imports but is broken (a torchvision build that does not match torch), is an
``unsupported`` row naming the package and the install command; the sweep goes on.

Hugging Face models return a ``ModelOutput`` (a pytree node), and take ``input_ids`` and
``attention_mask`` by keyword (the inputs functions return a dict). ``use_cache`` is off by
default: a cache object is not a tensor, so it is neither compared nor differentiated
(``+variant.kwargs.use_cache=true`` puts it back; the row's notes then say it was skipped).
"""

from __future__ import annotations

import importlib

from study.errors import Unsupported

INSTALL = 'pip install -e ".[models]"'
TOKENS = 256  # token ids are drawn below this: any vocab_size >= 256 takes them


def need(package: str):
    """The imported package, or ``Unsupported`` naming it and how to install it."""
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] != package.split(".")[0]:
            why = f"{package} imports but needs {e.name}, which is not installed: {INSTALL}"
        else:
            why = (
                f"this model needs {package}, which is not installed: {INSTALL} "
                f"(or pip install {package})"
            )
    except Exception as e:  # noqa: BLE001 - a broken install is a row's reason, not a crash
        import torch

        why = (
            f"{package} is installed but does not import ({type(e).__name__}: "
            f"{' '.join(str(e).split())[:200]}): a build that does not match torch "
            f"{torch.__version__}? Install the {package} build made for this torch"
        )
    # raised outside the handler: the row's reason is this, not the import error under it
    raise Unsupported(why)


def gpt2(dim: int, heads: int, seq_len: int, layers: int = 2, vocab_size: int = 1024,
         use_cache: bool = False, attn_implementation: str = "sdpa"):  # fmt: skip
    """A GPT-2 decoder (transformers GPT2Model) from a small config."""
    t = need("transformers")
    cfg = t.GPT2Config(
        n_embd=dim,
        n_head=heads,
        n_layer=layers,
        n_positions=max(seq_len, 1024),
        vocab_size=vocab_size,
        use_cache=use_cache,
        attn_implementation=attn_implementation,
        bos_token_id=vocab_size - 1,  # GPT-2's own (50256) lies outside a small vocabulary
        eos_token_id=vocab_size - 1,
    )
    return t.GPT2Model(cfg)


def bert(dim: int, heads: int, hidden: int, seq_len: int, layers: int = 2,
         vocab_size: int = 1024, attn_implementation: str = "sdpa"):  # fmt: skip
    """A BERT encoder (transformers BertModel) from a small config."""
    t = need("transformers")
    cfg = t.BertConfig(
        hidden_size=dim,
        num_attention_heads=heads,
        intermediate_size=hidden,
        num_hidden_layers=layers,
        max_position_embeddings=max(seq_len, 512),
        vocab_size=vocab_size,
        attn_implementation=attn_implementation,
    )
    return t.BertModel(cfg)


def tokens(batch: int, seq_len: int, *, device, gen):
    """``input_ids`` and ``attention_mask`` by keyword; the last row's final quarter is
    padding, so the mask does something."""
    import torch

    ids = torch.randint(0, TOKENS, (batch, seq_len), generator=gen, device=device)
    mask = torch.ones(batch, seq_len, dtype=torch.long, device=device)
    mask[-1, seq_len - max(1, seq_len // 4) :] = 0
    return {"input_ids": ids, "attention_mask": mask}


def vit(n: int, dim: int, heads: int, layers: int = 4, patch: int = 16, classes: int = 1000):
    """A vision transformer (timm VisionTransformer) at image side ``n``."""
    need("timm")
    from timm.models.vision_transformer import VisionTransformer

    return VisionTransformer(img_size=n, patch_size=patch, embed_dim=dim, depth=layers,
                             num_heads=heads, num_classes=classes)  # fmt: skip


def resnet50(classes: int = 1000):
    """torchvision's ResNet-50, random weights."""
    tv = need("torchvision")
    return tv.models.resnet50(weights=None, num_classes=classes)


def images(batch: int, n: int, *, dtype, device, gen):
    """A batch of random images, ``n`` x ``n`` pixels, 3 channels."""
    import torch

    return torch.randn(batch, 3, n, n, generator=gen, device=device, dtype=dtype)
