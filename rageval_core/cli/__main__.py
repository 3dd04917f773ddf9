"""`python -m rageval_core.cli ARGS`: the `rageval` command."""

from rageval_core.cli.dispatch import entry

if __name__ == "__main__":  # not when a tool imports every module (pkgutil.walk_packages)
    entry()
