"""`python -m rageval_core.settings [FILE]`: the settings table (schema.main)."""

import sys

from rageval_core.settings.schema import main

sys.exit(main(sys.argv[1:]))
