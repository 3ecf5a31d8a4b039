"""The command line: the typer app, its options, help and console, one module per group of commands."""
