"""The diagnosis harness: contracts, protocols and the pipeline (no Ray)."""
