"""Stream jobs: the pure detection engine (engine/) and the shells that run it: Faust, embedded, offline."""
