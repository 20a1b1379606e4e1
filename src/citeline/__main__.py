"""`python -m citeline` runs the CLI."""

from citeline.cli.main import run

run()
