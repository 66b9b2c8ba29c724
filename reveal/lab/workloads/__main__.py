"""`python -m reveal.lab.workloads KIND …` runs one workload."""

import sys

from reveal.lab.workloads.cli import main

sys.exit(main())
