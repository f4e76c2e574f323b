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


def test_more_shapes_of_secret_values() -> None:
    assert redact("DB_PASSWORD:\n----\nhunter2\n") == "DB_PASSWORD:\n----\n[redacted]\n"  # describe configmap
    assert redact("password: x") == "password: [redacted]"
    assert redact('{"password": "x", "user": "u"}') == '{"password": "[redacted]", "user": "u"}'
    assert redact("Authorization: Bearer abcdefghijkl") == "Authorization: Bearer [redacted]"
    assert redact("--token abcdef123 --v=2") == "--token [redacted] --v=2"
    assert redact("postgres://u:pw@h:5432/db") == "postgres://u:[redacted]@h:5432/db"


def test_names_of_references_and_the_next_line_are_kept() -> None:
    kept = [
        "    SecretName:  db-secret\n    Optional:    false",
        "    TokenExpirationSeconds:  3607",
        "db-secret:\n  Type: Opaque",
        "      secretKeyRef:\n        name: db",
    ]
    assert [redact(t) for t in kept] == kept
