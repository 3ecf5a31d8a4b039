"""``python -m onnxop_cli``."""

from .cli import main

main()
