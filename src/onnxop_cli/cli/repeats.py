"""An option given twice: a list accumulates, a single value must agree.

click keeps the last value of a single-value option silently, so
``unsqueeze --axes 0 --axes 1`` or ``flatten --axis 1 --axis 2`` used to run
with half of what was asked. Every command and the group use
:class:`RefuseRepeats` (see help.py): options declared ``multiple`` (a
typer ``list[...]`` option, such as ``--axes``) accumulate as click does; any
other option given twice with different values is refused, naming both, and
the same value twice is accepted. Flags (``--json``) may repeat.

The hook is the parser's per-option ``process`` (typer vendors its click, so
the private names below are pinned with typer's version).
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError


def _refusing(cls: type) -> type:
    """A subclass of click's parser option class that refuses a second,
    different value."""

    class StoredOnce(cls):  # type: ignore[misc, valid-type]
        def process(self, value: Any, state: Any) -> None:
            if self.dest in state.opts and state.opts[self.dest] != value:
                name = max(self.obj.opts, key=len)
                raise UsageError(
                    f"{name} given twice, as {_shown(state.opts[self.dest])} and {_shown(value)}; give it once"
                )
            super().process(value, state)

    return StoredOnce


def _shown(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


_classes: dict[type, type] = {}


def refuse_repeats(parser: Any) -> Any:
    """Make every single-value option of ``parser`` refuse a different second value."""
    for opt in [*parser._long_opt.values(), *parser._short_opt.values()]:
        if opt.action == "store" and not getattr(opt.obj, "multiple", False):
            base = type(opt)
            if base not in _classes.values():
                opt.__class__ = _classes.setdefault(base, _refusing(base))
    return parser


class RefuseRepeats:
    """Mixin for click commands and groups: their parser refuses repeats."""

    def make_parser(self, ctx: Any) -> Any:
        return refuse_repeats(super().make_parser(ctx))  # type: ignore[misc]


def agree(name: str, *values: Any) -> Any:
    """One option given in two places (before the command and after it): the
    value, if they agree or only one was given; refused if they differ."""
    given = [v for v in values if v is not None]
    if len({str(v) for v in given}) > 1:
        raise UsageError(f"{name} given twice, as {given[0]} and {given[1]}; give it once")
    return given[0] if given else None


def joined(values: str | list[str] | tuple[str, ...], sep: str = ",") -> str:
    """A list option given several times (``--axes 0 --axes 1``), as one
    comma-separated text (``"0,1"``)."""
    return values if isinstance(values, str) else sep.join(values)
