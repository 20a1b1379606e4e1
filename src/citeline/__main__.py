"""`python -m citeline` runs the CLI."""

from citeline.cli import main

main()
