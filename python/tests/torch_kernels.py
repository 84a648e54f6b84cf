"""torch kernels for the package's GPU tests, written here from the operation's formula (as
numpy_kernels.py's): they share no code with the package beyond the bundle they read."""
from __future__ import annotations


def more_exact_than_declared(bundle):
    """numpy_kernels.more_exact_than_declared on the bundle's GPU: float64 throughout, rounded to
    float32 once."""
    import torch
    q, k = bundle.q.to(torch.float64), bundle.k.to(torch.float64)
    heads = torch.einsum("mh,mhn->mn", bundle.weights.to(torch.float64),
                         torch.relu(torch.einsum("mhd,nd->mhn", q, k)))
    logits = (heads * bundle.k_scale.to(torch.float64)[None, :]).to(torch.float32)
    j = torch.arange(bundle.n, device=logits.device)[None, :]
    inside = (j >= bundle.ks[:, None]) & (j < bundle.ke[:, None])
    return torch.where(inside, logits, torch.full_like(logits, float("-inf")))
