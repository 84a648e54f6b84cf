"""Reference implementations in the styles people use today, each a kernel function fn(bundle)
-> logits that serve(), `mqacheck run --kernel` and the pytest plugin accept, so one table shows
how far each is from the exact value:

    style           what it does                                                 source read
    fp32_einsum     the operation in float32, k_scale after the head sum         reference/bounds/README.md
    deepgemm_test   k dequantized (k * k_scale in float32), fp32 einsum, relu,   DeepGEMM tests/test_attention.py
                    weighted head sum                                            ref_fp8_mqa_logits
    vllm_bf16       q, k to bfloat16, bf16 einsum (dots rounded to bf16),        vllm-project/vllm@2b217270
                                                                                 mqa_logits_fallback.py
                    times k_scale in float32, relu, weighted head sum            fp8_mqa_logits_torch
    vllm_rocm_bf16  k * k_scale rounded to bfloat16, bf16 einsum, relu,          rocm_aiter_mla_sparse.py
                    weighted head sum                                            fp8_mqa_logits_torch, as read
                                                                                 in a ROCm fork of vLLM

torch_styles: on torch tensors (device bundles), as the sources write them.
numpy_styles: NumPy twins on the host, the same roundings in the same places (the accumulation
order inside a float32 sum may differ; the bounds cover any order).
"""
