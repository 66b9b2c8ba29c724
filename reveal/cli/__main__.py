"""`python -m reveal.cli` runs the `reveal` command."""

import sys

from reveal.cli import main

sys.exit(main())
