"""`python -m fastpack`: the same as the `fastpack` command."""

import sys

from .cli import main

sys.exit(main())
