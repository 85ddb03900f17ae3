"""A credential goes only to allow-listed hosts, judged on the URL as the HTTP client parses it."""

from __future__ import annotations

import pytest

from hermes_common.hosts import HostAllowList

SLACK = HostAllowList.of(domains=["slack.com"], origins=["http://127.0.0.1:8123/api/"])


@pytest.mark.parametrize("url", [
    "https://files.slack.com/files-pri/T1-F1/x.png",
    "https://slack.com/x",
    "HTTPS://Files.Slack.COM/x",          # case
    "https://files.slack.com./x",         # trailing dot of a fully qualified name
    "https://files.slack.com:443/x",      # the default port written out
    "http://127.0.0.1:8123/files/F1",     # the configured origin (a local fake)
])
def test_allowed(url: str) -> None:
    assert SLACK.parse(url) is not None


@pytest.mark.parametrize("url", [
    "https://files.slack.com:x@evil.example/",      # userinfo: the host is evil.example
    "https://files.slack.com@evil.example/",
    "https://user:pw@files.slack.com/",             # any userinfo at all
    "https://evil.example\\@files.slack.com/",      # backslash in the authority
    "https://evil.example#@files.slack.com/",
    "https://evil.example?@files.slack.com/",
    "https://files.slack.com.evil.example/",        # suffix of another domain
    "https://evilslack.com/",
    "https://slаck.com/",                           # Cyrillic а: another domain
    "https://files.slack.com:8443/x",               # another port
    "http://files.slack.com/x",                     # clear text
    "http://127.0.0.1:8124/files/F1",               # the local origin, other port
    "http://localhost:8123/files/F1",               # same machine, other name
    "ftp://files.slack.com/x",
    "//files.slack.com/x",
    "",
    "not a url",
])
def test_refused(url: str) -> None:
    assert SLACK.parse(url) is None
