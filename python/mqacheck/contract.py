"""A kernel's declared contract as mqacheck's command-line flags, generically: every keyword is a
flag of `mqacheck check` (cli/contract_options.hpp), so a flag mqacheck adds needs no
change here.

    contract_flags(accumulate="fp32", relu="fmax")   -> ["--accumulate", "fp32", "--relu", "fmax"]
    contract_flags(promote_every=4)                  -> ["--promote-every", "4"]
    contract_flags(some_switch=True)                 -> ["--some-switch"]    (False or None: left out)
"""
from __future__ import annotations

from typing import Any


def contract_flags(**contract: Any) -> list[str]:
    flags: list[str] = []
    for key, value in contract.items():
        flag = "--" + key.strip("_").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                flags += [flag, str(item)]
        else:
            flags += [flag, str(value)]
    return flags
