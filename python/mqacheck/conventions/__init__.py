"""The call conventions of the libraries mqacheck judges: each turns a bundle into that library's
call and the call's result back into logits, so a kernel is pointed at, not wrapped by hand.

    convention      signature                                                  source read
    deepgemm        fn(q, (k, k_scale), weights, ks, ke, clean_logits=...)    deepgemm.SOURCE
    aiter           fn(q, k, k_scale, weights, ks, ke)                        aiter.SOURCE
    vllm            fn(q, k, k_scale [n, 1], weights, ks, ke)                 vllm.SOURCE
    vllm-rocm       fn(q, (k, k_scale [n, 1]), weights, ks, ke)               vllm_rocm.SOURCE
    flydsl          fn(q, k, k_scale, weights, ks, ke, clean_logits=...)      flydsl.SOURCE
    deepgemm-fp4    fn((q, None), (k, k_scale), weights, ks, ke, clean_logits=...,
                       max_seqlen_k=0, logits_dtype=float32)                   deepgemm_fp4.SOURCE
      -relative     max_seqlen_k = the longest window, clean_logits=False (judge: columns relative)
      -bf16         logits_dtype=bfloat16 (judge: logits_dtype bf16); -relative-bf16 both
    deepgemm-paged  fn(q, kv_cache, weights, context_lens, block_table, schedule, max_context_len,
                       clean_logits=...)                                       deepgemm_paged.SOURCE
    deepgemm-fp4-paged  fn((q, None), kv_cache, weights, context_lens [b, next_n], block_table, schedule,
                       max_context_len, clean_logits=False, logits_dtype=float32)
                                                                               deepgemm_paged.CURRENT_SOURCE
    aiter-paged     fn(q, kv_cache, weights, out, context_lens, block_table, max_model_len, ...)
                                                                               aiter_paged.SOURCE
    bundle          fn(bundle) -> logits  or  fn(bundle, out)                 mqacheck.launch

Each library convention calls one operation: prefill (fp8_mqa_logits, fp8_fp4_mqa_logits) or paged
decode (fp8_paged_mqa_logits); a case of the other is refused with a message that says so.

python/README.md ("Library conventions") records layouts, dtypes and output strides, and which
conventions were run against their real library. An indexer's second stage, a top-k function over
the logits, has conventions of its own: conventions/topk.py (torch-topk, vllm-prefill, vllm-decode).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import aiter, aiter_paged, deepgemm, deepgemm_fp4, deepgemm_paged, flydsl, vllm, vllm_rocm

Call = Callable[[Callable[..., Any], Any], Any]


@dataclass(frozen=True)
class Convention:
    name: str
    library: str
    signature: str
    source: str
    call: Call | None  # None: the function takes the bundle itself
    operation: str = "prefill"  # what the library function computes: "prefill", "paged"; "both" for bundle
    relative_columns: bool = False  # logits of key j at column j - ks (judged --columns relative)

    def takes(self, operation: str) -> bool:
        return self.operation in ("both", operation)

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A kernel function for serve()/launch(): ``fn`` itself, or fn(bundle) -> logits calling it."""
        if self.call is None:
            return fn
        call, name, operation = self.call, self.name, self.operation

        def kernel(bundle: Any) -> Any:
            if bundle.operation != operation:
                raise ValueError(f"case '{bundle.name}' is {bundle.operation} but the {name} convention calls the "
                                 f"{operation} operation (run --kernel skips such cases with --operation {operation})")
            return call(fn, bundle)

        kernel.__qualname__ = f"{self.name}({getattr(fn, '__qualname__', fn)})"
        return kernel


CONVENTIONS: dict[str, Convention] = {
    c.name: c
    for c in (
        Convention("bundle", "mqacheck", "fn(bundle) -> logits, or fn(bundle, out)", "mqacheck.launch", None, "both"),
        Convention("deepgemm", deepgemm.LIBRARY, deepgemm.SIGNATURE, deepgemm.SOURCE, deepgemm.call),
        Convention("aiter", aiter.LIBRARY, aiter.SIGNATURE, aiter.SOURCE, aiter.call),
        Convention("vllm", vllm.LIBRARY, vllm.SIGNATURE, vllm.SOURCE, vllm.call),
        Convention("vllm-rocm", vllm_rocm.LIBRARY, vllm_rocm.SIGNATURE, vllm_rocm.SOURCE, vllm_rocm.call),
        Convention("flydsl", flydsl.LIBRARY, flydsl.SIGNATURE, flydsl.SOURCE, flydsl.call),
        Convention("deepgemm-paged", deepgemm_paged.LIBRARY, deepgemm_paged.SIGNATURE, deepgemm_paged.SOURCE,
                   deepgemm_paged.call, deepgemm_paged.OPERATION),
        Convention("deepgemm-fp4-paged", deepgemm_paged.LIBRARY, deepgemm_paged.CURRENT_SIGNATURE,
                   deepgemm_paged.CURRENT_SOURCE, deepgemm_paged.call_current, deepgemm_paged.OPERATION),
        Convention("aiter-paged", aiter_paged.LIBRARY, aiter_paged.SIGNATURE, aiter_paged.SOURCE, aiter_paged.call,
                   aiter_paged.OPERATION),
        *(Convention("deepgemm-fp4" + suffix, deepgemm_fp4.LIBRARY, deepgemm_fp4.SIGNATURE, deepgemm_fp4.SOURCE,
                     deepgemm_fp4.caller(*form), relative_columns=form[0]) for suffix, form in deepgemm_fp4.VARIANTS.items()),
    )
}


def convention_named(name: str) -> Convention:
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"convention '{name}' is not known (accepted: {', '.join(CONVENTIONS)})") from None
