"""Analysis over backend data: robust deviation, anomaly ranking, log templates."""
