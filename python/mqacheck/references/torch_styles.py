"""The reference styles on torch tensors, written as their sources write them (see the package's
references/__init__.py); each is fn(bundle) -> logits for a device bundle (load_inputs(path, "cuda")).

    python3 -m mqacheck.adapter --device cuda --function mqacheck.references.torch_styles:vllm_bf16
"""
from __future__ import annotations

from typing import Any

from ..bundle import Bundle
from ..tensors import require_torch


def fp32_einsum(bundle: Bundle) -> Any:
    """The operation in float32: float32 dots, relu, float32 weighted head sum, times k_scale."""
    torch = require_torch("torch_styles")
    dots = torch.einsum("mhd,nd->mhn", bundle.q.float(), bundle.k.float())
    logits = torch.einsum("mh,mhn->mn", bundle.weights, dots.relu()) * bundle.k_scale[None, :]
    return _masked(bundle, logits)


def deepgemm_test(bundle: Bundle) -> Any:
    """DeepGEMM tests/test_attention.py ref_fp8_mqa_logits, fed the dequantized fp8 inputs."""
    torch = require_torch("torch_styles")
    q = bundle.q.float()
    kv = bundle.k.float() * bundle.k_scale[:, None]
    score = torch.einsum("mhd,nd->hmn", q, kv)
    logits = (score.relu() * bundle.weights.unsqueeze(-1).transpose(0, 1)).sum(dim=0)
    return _masked(bundle, logits)


def vllm_bf16(bundle: Bundle) -> Any:
    """vLLM vllm/v1/attention/ops/mqa_logits_fallback.py fp8_mqa_logits_torch."""
    torch = require_torch("torch_styles")
    k = bundle.k.to(torch.bfloat16)
    q = bundle.q.to(torch.bfloat16)
    score = torch.einsum("mhd,nd->hmn", q, k).float() * bundle.k_scale
    logits = (score.relu() * bundle.weights.unsqueeze(-1).transpose(0, 1)).sum(dim=0)
    return _masked(bundle, logits)


def vllm_rocm_bf16(bundle: Bundle) -> Any:
    """vLLM vllm/v1/attention/ops/rocm_aiter_mla_sparse.py fp8_mqa_logits_torch (k scaled in bf16)."""
    torch = require_torch("torch_styles")
    k = (bundle.k.to(torch.float32) * bundle.k_scale[:, None]).to(torch.bfloat16)
    q = bundle.q.to(torch.bfloat16)
    score = torch.einsum("mhd,nd->hmn", q, k).float()
    logits = (score.relu() * bundle.weights.unsqueeze(-1).transpose(0, 1)).sum(dim=0)
    return _masked(bundle, logits)


def _masked(bundle: Bundle, logits: Any) -> Any:
    torch = require_torch("torch_styles")
    j = torch.arange(bundle.n, device=logits.device)[None, :]
    inside = (j >= bundle.ks[:, None]) & (j < bundle.ke[:, None])
    return logits.masked_fill(~inside, float("-inf"))
