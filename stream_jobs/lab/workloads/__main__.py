"""`python -m stream_jobs.lab.workloads KIND …` runs one workload."""

import sys

from stream_jobs.lab.workloads.cli import main

sys.exit(main())
