"""A user's config mistake, said in one line: Hydra's and OmegaConf's errors, made plain.

Hydra reports a bad override (``variant=nope``, ``shape.seq_len=abc``, ``shape.seqlen=32``)
with its own text and exit status 1, the harness-failure code, and for an unknown key advises
``+shape.seqlen=32``, which then runs. ``explain`` turns each into ``[study] config error``'s
one line, with the choices or the key meant; ``hydra_errors_are_config_errors`` makes
``python -m study.run`` exit 2 with it, as the README says, whether the mistake is met while
Hydra composes the sweep or while the study checks its points.
"""

from __future__ import annotations

import difflib
import re
import sys

from study.config.identity import removed
from study.config.rules import known_keys


def fail(message: str, code: int = 2, what: str = "config error") -> None:
    """A user's mistake: the message, no traceback, exit ``code``."""
    print(f"[study] {what}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def _first_line(text: str) -> str:
    return " ".join(str(text).strip().splitlines()[0].split()) if str(text).strip() else ""


def _missing_group(text: str) -> str | None:
    """``Could not find 'variant/nope'`` with Hydra's list of options, in one line."""
    m = re.search(r"Could not find '([^']+)/([^'/]+)'", text)
    if not m:
        return None
    group, value = m.groups()
    options = re.findall(r"^\t(\S+)$", text.split("Config search path")[0], re.M)
    near = difflib.get_close_matches(value, options, n=1)
    hint = f" (did you mean {group}={near[0]}?)" if near else ""
    known = f"; known: {', '.join(options)}" if options else ""
    noun = {"compile": "compile target", "hydra/launcher": "launcher"}.get(group, group)
    return f"{group}={value} is not a {noun}{known}{hint}."


def unknown_key(key: str) -> str:
    if (instead := removed(key)) is not None:
        return f"{key} was removed: {instead}."

    parent = key.rsplit(".", 1)[0] if "." in key else ""
    keys = known_keys(parent)
    near = difflib.get_close_matches(key.rsplit(".", 1)[-1], keys, n=1)
    hint = f" Did you mean {parent + '.' if parent else ''}{near[0]}?" if near else ""
    where = f"{parent} has" if parent else "the study has"
    return (
        f"unknown key {key!r}: {where} no such setting.{hint} (Keys: SCHEMA.md, or "
        "`python -m study.run --cfg job`.)"
    )


def explain(e: BaseException) -> str | None:
    """One line for a config mistake in ``e`` (Hydra's composition, OmegaConf's types, the
    override grammar), or None when ``e`` is no config mistake."""
    from hydra.errors import (
        ConfigCompositionException,
        MissingConfigException,
        OverrideParseException,
    )
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, ValidationError

    text = str(e)
    if isinstance(e, MissingConfigException):
        return _missing_group(text) or _first_line(text)
    if isinstance(e, OverrideParseException):
        which = getattr(e, "override", "") or "an override"
        return f"cannot read {which}: {_first_line(text)} (Hydra's override grammar)."
    cause = e.__cause__
    if isinstance(e, ConfigCompositionException) and cause is not None:
        key = getattr(cause, "full_key", None)
        if isinstance(cause, ConfigAttributeError | ConfigKeyError) and key:
            return unknown_key(str(key))
        if isinstance(cause, ValidationError):
            said = _first_line(cause)
            m = re.match(r"Value '(.*)' of type '\w+' could not be converted to (\w+)", said)
            if m and key:
                return f"{key}={m.group(1)}: not a valid {m.group(2).lower()}."
            return f"{key or 'a value'}: {said}"
    if isinstance(e, ConfigCompositionException):
        return _missing_group(text) or _first_line(text)
    return None


def hydra_errors_are_config_errors() -> None:
    """Make Hydra's error report say a config mistake as the study's one line, exit 2; any
    other error keeps Hydra's report and exit 1. (Hydra 1.3 reports through
    ``hydra._internal.utils.run_and_report``; if a later Hydra moves it, its report stays.)"""
    import hydra._internal.utils as hu

    original = getattr(hu, "run_and_report", None)
    if original is None or getattr(original, "_study", False):
        return

    def run_and_report(func):
        try:
            return func()
        except Exception as e:  # noqa: BLE001 - a config mistake is said; the rest goes on
            why = explain(e)
            if why is None:

                def again(err: Exception = e):
                    raise err

                return original(again)
            print(f"[study] config error: {why}", file=sys.stderr, flush=True)
            sys.exit(2)

    run_and_report._study = True
    hu.run_and_report = run_and_report
