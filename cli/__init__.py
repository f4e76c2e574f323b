"""The ``raydiag`` command line (``cli/main.py``): serve, stop, ask, ingest, models pull, db upgrade,
trace, telemetry check and the evaluations. It starts the Ray layer (``deployments/``) where a command
needs the app and runs everything else as plain Python."""
