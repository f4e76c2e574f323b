"""Secret values never leave a cluster tool: an environment variable, a YAML/JSON field, a ConfigMap key,
a ``key=value`` pair, a bearer token or a URL's password keeps its name and loses its value, in every
backend's output. A name that only mentions a secret (``SecretName``, ``TokenExpirationSeconds``,
``secretKeyRef``) names a reference, not a value, and is kept."""

from __future__ import annotations

import re

_WORD = r"(?:password|passwd|pwd|secret|token|api[_\-]?key|apikey|credential|private[_\-]?key)"
# A key that names a secret value; not one that names where a secret is or how long a token lives.
SECRET_NAME = (
    rf"(?![\w.\-]*(?:name|names|ref|seconds|namespace|path|file|type|kind|count|mount|expiration|version|_per_second)"
    rf"\b)[\w.\-]*{_WORD}[\w.\-]*"
)
REDACTED = "[redacted]"

# "      DB_PASSWORD:  hunter2" (describe's environment, a YAML map, a log line); a value from a
# secretKeyRef reads "<set to the key 'x' in secret 'y'>", which names no value and is kept.
_KEY_COLON = re.compile(rf"(?im)^([ \t]*[\"']?{SECRET_NAME}[\"']?:[ \t]+)(?!<set to the key)(?![|>][ \t]*$)(\S.*)$")
# YAML env entries: "- name: DB_PASSWORD" followed by "  value: hunter2".
_YAML_ENV = re.compile(rf"(?im)^([ \t]*-[ \t]*name:[ \t]*[\"']?{SECRET_NAME}[\"']?[ \t]*\n[ \t]*value:[ \t]*)(.+)$")
# JSON: {"name": "DB_PASSWORD", "value": "hunter2"} and {"password": "hunter2"} (also escaped inside JSON).
_JSON_ENV = re.compile(
    rf"(?i)(\\?\"name\\?\":\s*\\?\"{SECRET_NAME}\\?\",\s*\\?\"value\\?\":\s*)\\?\"(?:[^\"\\]|\\.)*?\\?\""
)
_JSON_KEY = re.compile(rf"(?i)(\\?\"{SECRET_NAME}\\?\":\s*)\\?\"(?:[^\"\\]|\\.)*?\\?\"")
# describe configmap: "DB_PASSWORD:\n----\nhunter2".
_DATA_BLOCK = re.compile(rf"(?im)^({SECRET_NAME}:[ \t]*\n-{{3,}}[ \t]*\n)(.+)$")
# key=value anywhere (a command line, a log line), "--token x", "Authorization: Bearer x", a URL's password.
_INLINE = re.compile(rf"(?i)\b({SECRET_NAME}[ \t]*=)(?!\[redacted\])([^\s,;&\"']+)")
_FLAG = re.compile(rf"(?i)(--{_WORD}[\w\-]*[ \t=]+)(?!\[redacted\])([^\s\"']+)")
_BEARER = re.compile(r"(?i)\b((?:bearer|basic)[ \t]+)[A-Za-z0-9._~+/=\-]{8,}")
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(@)")


def redact(text: str) -> str:
    text = _DATA_BLOCK.sub(lambda m: m.group(1) + REDACTED, text)
    text = _KEY_COLON.sub(lambda m: m.group(1) + REDACTED, text)
    text = _YAML_ENV.sub(lambda m: m.group(1) + REDACTED, text)
    text = _JSON_ENV.sub(lambda m: m.group(1) + f'"{REDACTED}"', text)
    text = _JSON_KEY.sub(lambda m: m.group(1) + f'"{REDACTED}"', text)
    text = _INLINE.sub(lambda m: m.group(1) + REDACTED, text)
    text = _FLAG.sub(lambda m: m.group(1) + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
