"""`python -m reveal` runs the `reveal` command."""

import sys

from reveal.launch import main

sys.exit(main())
