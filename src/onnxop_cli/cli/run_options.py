"""``run``'s options for models of other operators (cli/run_mixed.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

OthersOpt = Annotated[
    Optional[str],
    typer.Option("--others", help="Run the nodes onnxop does not run (Conv, Add, com.microsoft ones, If...) "
                 "on onnxruntime's CPU provider, or on onnx.reference: onnxop runs its own on the GPU, each "
                 "connected run of the others goes to the other runtime. Example: --others onnxruntime",
                 show_default=False, metavar="onnxruntime|reference"),
]
VerifyOpt = Annotated[
    bool,
    typer.Option("--verify", help="Run every node onnxop ran again on onnxruntime (onnx.reference where it "
                 "has no kernel) and compare bit for bit; the first difference stops the run (exit 1). "
                 "Example: --others onnxruntime --verify"),
]
DumpOpt = Annotated[
    Optional[Path],
    typer.Option("--dump", help="Write every value a node makes as DIR/<name>.npy (.pb for types numpy "
                 "lacks; characters a file name cannot hold as %XX), for onnxop compare. Example: --dump vals/",
                 show_default=False, metavar="DIR"),
]
