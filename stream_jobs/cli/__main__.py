"""`python -m stream_jobs.cli` runs the `reveal` command."""

import sys

from stream_jobs.cli import main

sys.exit(main())
