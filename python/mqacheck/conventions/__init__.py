"""The call conventions of the libraries mqacheck judges: each turns a bundle into that library's
call and the call's result back into logits, so a kernel is pointed at, not wrapped by hand.

    convention   signature                                                     source read
    deepgemm     fn(q, (k, k_scale), weights, ks, ke, clean_logits=...)       deepgemm.SOURCE
    aiter        fn(q, k, k_scale, weights, ks, ke)                           aiter.SOURCE
    vllm         fn(q, k, k_scale [n, 1], weights, ks, ke)                    vllm.SOURCE
    bundle       fn(bundle) -> logits  or  fn(bundle, out)                    mqacheck.launch

python/README.md ("Library conventions") records layouts, dtypes and output strides, and which
conventions were run against their real library.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import aiter, deepgemm, vllm

Call = Callable[[Callable[..., Any], Any], Any]


@dataclass(frozen=True)
class Convention:
    name: str
    library: str
    signature: str
    source: str
    call: Call | None  # None: the function takes the bundle itself

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A kernel function for serve()/launch(): ``fn`` itself, or fn(bundle) -> logits calling it."""
        if self.call is None:
            return fn
        call = self.call

        def kernel(bundle: Any) -> Any:
            return call(fn, bundle)

        kernel.__qualname__ = f"{self.name}({getattr(fn, '__qualname__', fn)})"
        return kernel


CONVENTIONS: dict[str, Convention] = {
    c.name: c
    for c in (
        Convention("bundle", "mqacheck", "fn(bundle) -> logits, or fn(bundle, out)", "mqacheck.launch", None),
        Convention("deepgemm", deepgemm.LIBRARY, deepgemm.SIGNATURE, deepgemm.SOURCE, deepgemm.call),
        Convention("aiter", aiter.LIBRARY, aiter.SIGNATURE, aiter.SOURCE, aiter.call),
        Convention("vllm", vllm.LIBRARY, vllm.SIGNATURE, vllm.SOURCE, vllm.call),
    )
}


def convention_named(name: str) -> Convention:
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"convention '{name}' is not known (accepted: {', '.join(CONVENTIONS)})") from None
