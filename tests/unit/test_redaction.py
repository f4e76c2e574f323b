from __future__ import annotations

from audit.redaction import TEXT_LIMIT, redact_text, redact_tree, safe_input_params


def test_input_params_follow_the_seed_rules() -> None:
    request = {
        "query": "q" * 500,
        "top_k": 5,
        "exact": True,
        "domains": ["database", "jvm"],
        "Authorization": "Bearer abc.def.ghi",
        "api_key": "sk-1234567890abcdefghij",
        "db_password": "hunter2",
        "x-Access-Token": "t",
        "client_secret": "s",
        "nested": {"password": "p", "a": 1},
        "mixed": ["a", 1],
    }
    out = safe_input_params(request, "call_1", step_id=7)
    assert out["query"] == "q" * TEXT_LIMIT
    assert out["query_truncated"] is True and out["query_chars"] == 500
    assert out["top_k"] == 5 and out["exact"] is True and out["domains"] == ["database", "jvm"]
    assert out["tool_call_id"] == "call_1" and out["step_id"] == 7 and out["request_bytes"] > 500
    for gone in ("Authorization", "api_key", "db_password", "x-Access-Token", "client_secret", "nested", "mixed"):
        assert gone not in out
    assert "hunter2" not in str(out) and "abc.def.ghi" not in str(out)


def test_short_text_is_kept_whole() -> None:
    out = safe_input_params({"query": "HikariCP"}, "c")
    assert out == {"query": "HikariCP", "tool_call_id": "c", "request_bytes": 20}


def test_secrets_inside_text_are_masked() -> None:
    text = (
        "login failed password=hunter2; curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x' "
        "mysql://app:s3cr3t@db:3306/x key sk-abcdefghijklmnopqrstuvwx AKIAABCDEFGHIJKLMNOP"
    )
    red = redact_text(text)
    for secret in ("hunter2", "eyJhbGciOiJIUzI1NiJ9", "s3cr3t", "sk-abcdefghijklmnopqrstuvwx", "AKIAABCDEFGHIJKLMNOP"):
        assert secret not in red
    assert "login failed" in red and "mysql://app:" in red


def test_tree_keeps_token_counts_but_drops_tokens() -> None:
    tree = {"input_tokens": 3, "total_tokens": 5, "tokens_reconciled": True, "token_count": 2, "auth_token": "x"}
    assert redact_tree(tree) == {"input_tokens": 3, "total_tokens": 5, "tokens_reconciled": True, "token_count": 2}
