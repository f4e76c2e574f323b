"""Hybrid retrieval over the knowledge base (plain Python; no Ray)."""
