from __future__ import annotations

from cluster.redact import redact


def test_secret_named_values_lose_their_values_in_every_format() -> None:
    assert redact("      DB_PASSWORD:  hunter2") == "      DB_PASSWORD:  [redacted]"
    assert redact("      DB_PASSWORD:  <set to the key 'p' in secret 's'>").endswith(
        "<set to the key 'p' in secret 's'>"
    )
    assert redact("    - name: API_TOKEN\n      value: abc123") == "    - name: API_TOKEN\n      value: [redacted]"
    assert redact('{"name": "GITHUB_TOKEN", "value": "ghp_x"}') == '{"name": "GITHUB_TOKEN", "value": "[redacted]"}'
    assert redact("connect password=pa55 user=app") == "connect password=[redacted] user=app"
    assert redact("      LOG_LEVEL:    debug") == "      LOG_LEVEL:    debug"
