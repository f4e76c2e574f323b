"""Telemetry backends: files (the bundled demo, the Nezha layout, Loghub, NAB) and Prometheus."""
