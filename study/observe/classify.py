"""Kernel classification: a kernel's (or CPU op's) name -> one class, by named regex rules.

Pure string functions, no torch: the analysis and the tests use them on names from real
H200 traces. The first matching rule wins, so specific rules come before broad ones.
"""

from __future__ import annotations

import re

CLASSES = (
    "gemm_cublas",  # cuBLAS / cuBLASLt: nvjet, sm80/sm90 xmma gemm, gemv, ampere/hopper gemm
    "gemm_cutlass",  # CUTLASS GEMM kernels
    "gemm_cpu",  # CPU GEMM ops (oneDNN / MKL behind aten::mm, bmm, addmm)
    "triton_pointwise",
    "triton_reduction",
    "triton_persistent_reduction",
    "triton_template",
    "triton_other",  # triton_for_ (foreach), triton_spl_ (split scan), other Triton names
    "cpp_generated",  # Inductor's C++ kernels on the CPU
    "flash",
    "mem_efficient",  # CUTLASS fmha (memory-efficient attention)
    "cudnn",
    "softmax",
    "aten_reduction",
    "copy",  # Memcpy DtoD/HtoD/DtoH and copy kernels (the hidden Memcpy)
    "memset",
    "aten_elementwise",
    "other",
)

_RULES: list[tuple[str, re.Pattern]] = [
    (
        "copy",
        re.compile(
            r"^Memcpy|copy_kernel|CatArrayBatchedCopy|at::native::Copy<|^aten::(copy_|clone|_to_copy|contiguous|_foreach_copy_)$",
            re.I,
        ),
    ),
    ("memset", re.compile(r"^Memset|^aten::(zero_|fill_)$", re.I)),
    ("triton_persistent_reduction", re.compile(r"^triton_per_")),
    ("triton_reduction", re.compile(r"^triton_red_")),
    ("triton_pointwise", re.compile(r"^triton_poi_")),
    ("triton_template", re.compile(r"^triton_tem_")),
    ("triton_other", re.compile(r"^triton_")),
    # graph_<i>_kernel: a C++ template (flex_attention's on the CPU), as its profiler range names it
    ("cpp_generated", re.compile(r"(^|_)cpp_fused_|^graph_\d+_cpp_|^graph_\d+_kernel$")),
    ("cudnn", re.compile(r"cudnn|^aten::_scaled_dot_product_cudnn_attention$", re.I)),
    (
        "flash",
        re.compile(
            r"flash_fwd|flash::|pytorch_flash|^aten::_scaled_dot_product_flash_attention|^aten::_flash_attention_forward$",
            re.I,
        ),
    ),
    (
        "mem_efficient",
        re.compile(
            r"fmha_cutlass|efficient_attention|^aten::_scaled_dot_product_efficient_attention$|^aten::_efficient_attention_forward$",
            re.I,
        ),
    ),
    ("gemm_cutlass", re.compile(r"cutlass.*gemm|gemm.*cutlass|cutlass_\d+_tensorop", re.I)),
    (
        "gemm_cublas",
        re.compile(
            r"^nvjet|xmma_gemm|gemm|gemv|^sm\d+_xmma|cublas|ampere_.*(s|h)\d+gemm|splitKreduce",
            re.I,
        ),
    ),
    (
        "gemm_cpu",
        re.compile(
            r"^aten::(mm|bmm|addmm|baddbmm|addbmm|_addmm_activation|mkldnn_\w*linear\w*|_mkl_linear)$|^mkldnn::|onednn",
            re.I,
        ),
    ),
    ("softmax", re.compile(r"softmax", re.I)),
    (
        "aten_reduction",
        re.compile(
            r"reduce_kernel|Reduce|^aten::(sum|mean|amax|amin|max|min|norm|var|std|logsumexp|argmax|argmin|prod)$",
            re.I,
        ),
    ),
    ("aten_elementwise", re.compile(r"elementwise|triu_tril|masked_fill|where|^aten::", re.I)),
]

GENERATED_CLASSES = {
    "triton_pointwise",
    "triton_reduction",
    "triton_persistent_reduction",
    "triton_template",
    "triton_other",
    "cpp_generated",
}

# What each pinned SDPA backend must show in the trace.
BACKEND_CLASS = {"flash": "flash", "efficient": "mem_efficient", "cudnn": "cudnn"}


def classify(name: str) -> str:
    for cls, pat in _RULES:
        if pat.search(name):
            return cls
    return "other"


def is_generated(name: str) -> bool:
    return classify(name) in GENERATED_CLASSES


_GENERIC = {"gpu_kernel_impl_nocast", "gpu_kernel_impl", "ReduceOp", "reduce_kernel"}
_TEMPLATE_ARGS = re.compile(r"<.*>", re.S)
_PARAMS = re.compile(r"\(.*\)$", re.S)


def short_name(name: str, width: int | None = None) -> str:
    """A readable short form: no return type, template arguments or parameter list. CSVs keep
    it whole; a figure that needs it narrower passes ``width`` (cut with an ellipsis)."""
    s = name.strip()
    functor = None
    if re.search(r"elementwise_kernel|reduce_kernel", s):
        # The functor tells what an elementwise/reduce kernel does (copy, fill, mul, ...).
        cands = re.findall(
            r"(\w+(?:Functor|_kernel_cuda|Ops|_kernel))\b", s[s.find("<") :] if "<" in s else ""
        )
        cands = [c for c in cands if c not in _GENERIC and not c.endswith("elementwise_kernel")]
        functor = cands[0] if cands else None
    s = s.replace("(anonymous namespace)::", "")
    if s.startswith("void "):
        s = s[5:]
    # Strip template args and parameter lists, innermost first, keeping the identifiers.
    prev = None
    while prev != s:
        prev = s
        s = re.sub(r"<[^<>]*>", "", s)
    s = _PARAMS.sub("", s).strip()
    s = s.replace("at::native::", "")
    if s.startswith("graph_") and "_cpp_" in s:
        s = s.split("_", 2)[2]  # graph_0_cpp_fused_x -> cpp_fused_x
    if functor:
        s = f"{s}[{functor}]"
    if width is not None and len(s) > width:
        s = s[: width - 1] + "…"
    return s
