"""`python -m zkconsumer` runs the command line."""

from zkconsumer.cli import main

main()
