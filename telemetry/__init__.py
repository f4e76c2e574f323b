"""Telemetry an SRE has: metric and log backends behind one protocol, time windows resolved against a
run's clock, and the analysis (robust deviation, anomaly ranking, log templates, call graph) that the
diagnosis tools expose. Plain Python: no Ray, no harness (DESIGN.md §1)."""
