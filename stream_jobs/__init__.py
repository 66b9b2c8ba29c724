"""Stream jobs: the pure detection engine (engine/), the host and cluster stages around it, and the runners that feed them: the Faust worker, the embedded runner and the offline runner."""
