"""`python -m rageval_core.settings [FILE]`: the settings table (schema.main)."""

import sys

from rageval_core.settings.schema import main

if __name__ == "__main__":  # not when a tool imports every module (pkgutil.walk_packages)
    sys.exit(main(sys.argv[1:]))
