"""Audit trail: schema, migrations, batching writer, redaction, trace reader (no Ray)."""
