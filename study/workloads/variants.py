"""The workload a variant config names: a registered variant, or your own (``variant.target``)."""

from __future__ import annotations

from study.workloads import custom, registry


def resolve(variant) -> registry.Entry:
    """The entry a variant config asks for: a registered name, or, with ``variant.target``
    set, the user's own factory (study.workloads.custom)."""
    if variant.get("target"):
        return custom.entry(variant)
    return registry.get(variant.name)
