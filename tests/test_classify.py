"""Kernel classification on real kernel names seen on the H200 (torch 2.11)."""

import pytest

from study.observe.classify import CLASSES, classify, is_generated, short_name

H200_NAMES = [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", "gemm_cublas"),
    (
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
        "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
        "mem_efficient",
    ),
    (
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, "
        "false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
        "flash",
    ),
    (
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0",
        "cudnn",
    ),
    (
        "triton_per_fused__softmax_exp_masked_fill_mul_prepare_softmax_online_sub_view_0",
        "triton_persistent_reduction",
    ),
    ("triton_tem_fused_bmm_transpose_view_0", "triton_template"),
    ("triton_poi_fused__to_copy_mul_0", "triton_pointwise"),
    ("triton_red_fused_sum_0", "triton_reduction"),
    (
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
        "gemm_cublas",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
        "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
        "aten_elementwise",
    ),
    (
        "void at::native::triu_tril_kernel<bool, long, true, 4, true>(at::cuda::detail::TensorInfo<bool, long>, "
        "at::cuda::detail::TensorInfo<bool const, long>, long, long, long)",
        "aten_elementwise",
    ),
    (
        "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, true>"
        "(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)",
        "softmax",
    ),
    ("Memcpy DtoD (Device -> Device)", "copy"),
    ("Memset (Device)", "memset"),
    ("graph_0_cpp_fused__softmax_masked_fill_mul_view_0", "cpp_generated"),
    ("graph_0_kernel", "cpp_generated"),  # a C++ template (flex_attention) on the CPU
    ("aten::bmm", "gemm_cpu"),
    ("aten::copy_", "copy"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "flash"),
    ("aten::_softmax", "softmax"),
    ("aten::masked_fill_", "aten_elementwise"),
    (
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
        "TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<c10::BFloat16, 2, 1, 1>, "
        "at::native::Copy<c10::BFloat16, c10::BFloat16> >(...)",
        "copy",
    ),
    ("some_unknown_kernel", "other"),
]


@pytest.mark.parametrize("name,expected", H200_NAMES)
def test_classify_real_names(name, expected):
    assert classify(name) == expected
    assert expected in CLASSES


def test_generated_only_for_inductor_kernels():
    assert is_generated("triton_poi_fused_add_0")
    assert is_generated("graph_3_cpp_fused_mul_1")
    assert not is_generated("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT")
    assert not is_generated("Memcpy DtoD (Device -> Device)")


def test_short_names_are_readable():
    assert short_name(H200_NAMES[2][0]) == "pytorch_flash::flash_fwd_kernel"
    assert short_name(H200_NAMES[11][0]) == "softmax_warp_forward"
    assert short_name(H200_NAMES[9][0]) == "vectorized_elementwise_kernel[FillFunctor]"
    assert short_name("graph_0_cpp_fused_mul_0") == "cpp_fused_mul_0"
    assert short_name("x" * 200) == "x" * 200  # CSVs hold whole values
    assert len(short_name("x" * 200, width=48)) == 48 and short_name("x" * 200, width=48)[-1] == "…"
