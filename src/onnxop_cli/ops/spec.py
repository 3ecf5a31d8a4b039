"""What the command line, the API, rendering and JSON need to know about an
operator, kept next to its versions: its parameters (attributes in some
opsets, constant inputs in others), their help and an example each. The CLI
builds one command per spec (cli/ops.py); nothing else lists the operators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import OpVersion


@dataclass(frozen=True)
class Param:
    """One parameter of an operator, by its ONNX name.

    ``kind`` is ``int`` (one integer), ``ints`` (a comma-separated list),
    ``float`` (one number), ``str`` (one of ``choices``), ``tensor`` (an
    input of the operator: a literal list or a tensor file, cli/tensor_ops.py)
    or ``value`` (a tensor attribute: one number or a tensor file). The option is ``--NAME`` unless ``option``
    says otherwise; ``help`` ends with an example of the option."""

    name: str
    kind: str
    help: str
    example: str
    short: str = ""
    empty_ok: bool = False  # the spec takes an empty list (Reshape to a scalar, Tile of a scalar); the op rules decide
    choices: tuple[str, ...] = ()  # the values a str (or an int: Reshape's allowzero 0, 1) may take
    default: object = None  # the API function's default (None: left out, the operator's own default)
    keyword_only: bool = False  # in the API function, after the ``*``
    type_name: bool = False  # an int that is a TensorProto type: its name (bfloat16, float32, int64) is taken too

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-").lower()  # ONNX input names in kebab case: --constant-value, --x

    @property
    def help_text(self) -> str:
        return f"{self.help} Example: {self.option} {self.example}"


@dataclass(frozen=True)
class OpSpec:
    op_type: str
    versions: tuple[type[OpVersion], ...]
    params: tuple[Param, ...]
    summary: str  # one line, for `onnxop --help`
    description: str  # the command's help, before its example
    example: str  # a whole command line
    api_doc: str = ""  # the API function's docstring (api.py); default: the summary, description and example

    @property
    def api_name(self) -> str:
        """The API function's name: ``python_name``, with a ``_`` after one
        that is a Python keyword or builtin (``slice_``)."""
        import builtins
        import keyword

        name = self.python_name
        return name + "_" if keyword.iskeyword(name) or hasattr(builtins, name) else name

    @property
    def command(self) -> str:
        """``DepthToSpace`` -> ``depth-to-space``; ``GatherND`` -> ``gather-nd``
        (a run of capitals is one word)."""
        out = ""
        for i, c in enumerate(self.op_type):
            out += ("-" if i and c.isupper() and not self.op_type[i - 1].isupper() else "") + c.lower()
        return out

    @property
    def python_name(self) -> str:
        return self.command.replace("-", "_")
