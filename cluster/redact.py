"""Secret values never leave a cluster tool: an environment variable or a YAML/JSON field whose name
looks secret keeps its name and loses its value, in every backend's output."""

from __future__ import annotations

import re

SECRET_NAME = r"[\w.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|apikey|credential|private[_\-]?key)[\w.\-]*"
REDACTED = "[redacted]"

# kubectl describe's environment block: "      DB_PASSWORD:  hunter2" (a value from a secretKeyRef reads
# "<set to the key 'x' in secret 'y'>", which names no value and is kept).
_DESCRIBE_ENV = re.compile(rf"(?im)^(\s+{SECRET_NAME}:\s+)(?!<set to the key)(\S.*)$")
# YAML env entries: "- name: DB_PASSWORD" followed by "  value: hunter2".
_YAML_ENV = re.compile(rf"(?im)^(\s*-\s*name:\s*[\"']?{SECRET_NAME}[\"']?\s*\n\s*value:\s*)(.+)$")
# JSON env entries: {"name": "DB_PASSWORD", "value": "hunter2"}.
_JSON_ENV = re.compile(rf"(?i)(\"name\":\s*\"{SECRET_NAME}\",\s*\"value\":\s*)\"(?:[^\"\\]|\\.)*\"")
# key=value and key: value anywhere (a command line, a log line).
_INLINE = re.compile(rf"(?i)\b({SECRET_NAME}\s*[=])(?!\s*\[redacted\])([^\s,;&\"']+)")


def redact(text: str) -> str:
    text = _DESCRIBE_ENV.sub(lambda m: m.group(1) + REDACTED, text)
    text = _YAML_ENV.sub(lambda m: m.group(1) + REDACTED, text)
    text = _JSON_ENV.sub(lambda m: m.group(1) + f'"{REDACTED}"', text)
    return _INLINE.sub(lambda m: m.group(1) + REDACTED, text)
