"""A curated model zoo: Hugging Face, timm and torchvision models from their config classes,
random weights, no download (``conf/variant/<model>.yaml``; the suite: ``+experiment=suite``).

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

The decoder LMs' ``latency`` regime (``regime=latency``, conf/regimes/) is one decode step: a
batch of one new token against a static KV cache (``DecodeStep``: transformers' ``StaticCache``,
prefilled with ``seq_len`` tokens), the call gpt-fast and vLLM compile. Each call writes the
same cache slot, so every call does the same work.
"""

from __future__ import annotations

import copy
import importlib
import inspect

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


def llama(dim: int, heads: int, hidden: int, seq_len: int, layers: int = 2,
          kv_heads: int | None = None, vocab_size: int = 1024,
          attn_implementation: str = "sdpa"):  # fmt: skip
    """A Llama-style decoder (transformers LlamaModel): RMSNorm, rotary embeddings, SwiGLU and
    grouped-query attention (``kv_heads``, default a quarter of ``heads``)."""
    t = need("transformers")
    cfg = t.LlamaConfig(
        hidden_size=dim,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads or max(1, heads // 4),
        intermediate_size=hidden,
        num_hidden_layers=layers,
        max_position_embeddings=max(seq_len + DECODE_SLACK, 1024),
        vocab_size=vocab_size,
        attn_implementation=attn_implementation,
    )
    return t.LlamaModel(cfg)


def distilbert(dim: int, heads: int, hidden: int, seq_len: int, layers: int = 2,
               vocab_size: int = 1024, attn_implementation: str = "sdpa"):  # fmt: skip
    """A DistilBERT encoder (transformers DistilBertModel) from a small config."""
    t = need("transformers")
    cfg = t.DistilBertConfig(
        dim=dim,
        n_heads=heads,
        hidden_dim=hidden,
        n_layers=layers,
        max_position_embeddings=max(seq_len, 512),
        vocab_size=vocab_size,
        attn_implementation=attn_implementation,
    )
    return t.DistilBertModel(cfg)


def t5(dim: int, heads: int, hidden: int, layers: int = 2, vocab_size: int = 1024):
    """A T5 encoder-decoder (transformers T5Model) from a small config: the encoder reads
    ``seq_len`` tokens, the decoder a quarter as many (``seq2seq`` inputs)."""
    t = need("transformers")
    cfg = t.T5Config(
        d_model=dim,
        num_heads=heads,
        d_kv=dim // heads,
        d_ff=hidden,
        num_layers=layers,
        num_decoder_layers=layers,
        vocab_size=vocab_size,
        decoder_start_token_id=0,
        use_cache=False,
    )
    return t.T5Model(cfg)


def seq2seq(batch: int, seq_len: int, *, device, gen):
    """An encoder-decoder's inputs by keyword: ``tokens`` for the encoder, and
    ``decoder_input_ids`` of a quarter of its length (at least one)."""
    import torch

    out = tokens(batch, seq_len, device=device, gen=gen)
    dec = max(1, seq_len // 4)
    out["decoder_input_ids"] = torch.randint(0, TOKENS, (batch, dec), generator=gen, device=device)
    return out


DECODE_SLACK = 8  # cache slots beyond the prefilled tokens: the decode step writes the first


def _decode_step():
    import torch
    from torch import nn

    class DecodeStep(nn.Module):
        """One decode step of a decoder LM against a static KV cache: ``batch`` new tokens at
        position ``past``, after ``past`` tokens prefilled into the cache. The cache is rebuilt
        and prefilled whenever the module moves (``.to``, ``.double()``), so a float64 copy
        holds its own float64 cache."""

        def __init__(self, model, batch: int, past: int):
            super().__init__()
            self.model, self.batch, self.past = model, batch, past
            self.cache = None
            params = inspect.signature(model.forward).parameters
            self.cache_kw = "cache" if "cache" in params else "past_key_values"
            self.prefill()

        def __deepcopy__(self, memo):  # the copy prefills a cache of its own
            return type(self)(copy.deepcopy(self.model, memo), self.batch, self.past)

        def _apply(self, fn, recurse=True):
            out = super()._apply(fn, recurse)
            self.prefill()
            return out

        def prefill(self) -> None:
            t = need("transformers")
            p = next(self.model.parameters())
            self.cache = t.StaticCache(
                config=self.model.config, max_cache_len=self.past + DECODE_SLACK
            )
            ids = torch.zeros(self.batch, self.past, dtype=torch.long, device=p.device)
            was = self.model.training
            with torch.no_grad():  # in eval mode: no dropout in the cache's contents
                self.model.eval()(input_ids=ids, use_cache=True, **{self.cache_kw: self.cache},
                                  cache_position=torch.arange(self.past, device=p.device))  # fmt: skip
            self.model.train(was)
            self.position = torch.tensor([self.past], device=p.device)

        def forward(self, input_ids):
            for layer in getattr(self.cache, "layers", ()):  # each call writes slot ``past``
                if hasattr(layer, "cumulative_length"):  # transformers' own count of tokens
                    layer.cumulative_length.fill_(self.past)
            out = self.model(input_ids=input_ids, use_cache=True, cache_position=self.position,
                             **{self.cache_kw: self.cache})  # fmt: skip
            return out.last_hidden_state

    return DecodeStep


def gpt2_decode(dim: int, heads: int, seq_len: int, batch: int, layers: int = 2,
                vocab_size: int = 1024):  # fmt: skip
    """One GPT-2 decode step against a static KV cache of ``seq_len`` tokens."""
    model = gpt2(dim, heads, seq_len + DECODE_SLACK, layers, vocab_size, use_cache=True)
    return _decode_step()(model, batch, seq_len)


def llama_decode(dim: int, heads: int, hidden: int, seq_len: int, batch: int, layers: int = 2,
                 kv_heads: int | None = None, vocab_size: int = 1024):  # fmt: skip
    """One Llama decode step against a static KV cache of ``seq_len`` tokens."""
    model = llama(dim, heads, hidden, seq_len, layers, kv_heads, vocab_size)
    return _decode_step()(model, batch, seq_len)


def next_token(batch: int, *, device, gen):
    """A decode step's input: one new token per sequence, by keyword."""
    import torch

    return {"input_ids": torch.randint(0, TOKENS, (batch, 1), generator=gen, device=device)}


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


def deit(n: int, dim: int, heads: int, layers: int = 12, patch: int = 16, classes: int = 1000):
    """DeiT (timm VisionTransformer at DeiT's sizes: DeiT-Ti is 192 wide, 3 heads, 12 deep)."""
    return vit(n, dim, heads, layers, patch, classes)


def timm_model(name: str, classes: int = 1000):
    """A timm model by name (``timm.create_model``), random weights, nothing downloaded."""
    timm = need("timm")
    return timm.create_model(name, pretrained=False, num_classes=classes)


def torchvision_model(name: str, classes: int = 1000):
    """A torchvision classification model by name (``resnet18``, ``convnext_tiny``, ``swin_t``,
    ``mobilenet_v3_large``, ...), random weights, nothing downloaded."""
    tv = need("torchvision")
    return tv.models.get_model(name, weights=None, num_classes=classes)


def resnet50(classes: int = 1000):
    """torchvision's ResNet-50, random weights."""
    return torchvision_model("resnet50", classes)


def images(batch: int, n: int, *, dtype, device, gen):
    """A batch of random images, ``n`` x ``n`` pixels, 3 channels."""
    import torch

    return torch.randn(batch, 3, n, n, generator=gen, device=device, dtype=dtype)
