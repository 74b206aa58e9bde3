"""`python -m scellis`: the same as the `scellis` command."""

import sys

from scellis.cli import main

sys.exit(main())
