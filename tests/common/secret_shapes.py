"""Every secret shape the one redaction module knows, as text that carries it.

Shared by the unit tests of `hermes_common.redact` and the sink tests (log line, `config
show`, an error text in a chat, the summarizer's input). `secret` is what must never be seen
after redaction. The last two need set-up at the sink: `REGISTERED` is a configured secret
without a recognizable shape, `ENV_NAME`/`ENV_VALUE` a secret-named environment variable.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    text: str
    secret: str


B64_LINE = "Ab+/" * 16

SHAPES: tuple[Shape, ...] = (
    Shape("openai_key", "use sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456 here",
          "ABCDEFGHIJKLMNOPQRSTUVWX123456"),
    Shape("short_sk_key", "use sk-Ab3dEf9 here", "Ab3dEf9"),
    Shape("restricted_key", "use rk-live0123456789ABCDEF here", "live0123456789ABCDEF"),
    Shape("stripe_live", "stripe sk_live_abcdefghij1234 here", "abcdefghij1234"),
    Shape("stripe_test", "publishable pk_test_ZZZZZZZZZZZZ here", "ZZZZZZZZZZZZ"),
    Shape("google", "google AIzaSyA1234567890abcdefghijklmnopqrstu end",
          "SyA1234567890abcdefghijklmnopqrstu"),
    Shape("aws_access", "aws AKIAIOSFODNN7EXAMPLE and more", "IOSFODNN7EXAMPLE"),
    Shape("aws_session", "aws ASIAIOSFODNN7EXAMPL2 and more", "IOSFODNN7EXAMPL2"),
    Shape("github_token", "github ghp_abcdefghijklmnopqrstuvwxyz0123 ok",
          "abcdefghijklmnopqrstuvwxyz0123"),
    Shape("github_oauth", "github gho_ZYXWVUTSRQPONMLKJIHGFE9876 ok", "ZYXWVUTSRQPONMLKJIHGFE9876"),
    Shape("github_pat", "pat github_pat_11ABCDEFG0123456789_abcdefghij ok",
          "11ABCDEFG0123456789_abcdefghij"),
    Shape("slack_bot", "slack xoxb-1111111111-2222222222-abcdefghijklmnop ok",
          "1111111111-2222222222-abcdefghijklmnop"),
    Shape("slack_refresh", "slack xoxe-1-QWERTYUIOP ok", "1-QWERTYUIOP"),
    Shape("slack_app", "slack xapp-1-A0000000000-1111111111-abcdef0123456789 ok",
          "A0000000000-1111111111-abcdef0123456789"),
    Shape("telegram_bot", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw ok",
          "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"),
    Shape("jwt", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_X",
          "dozjgNryP4J3jVmNHl0w5N_X"),
    Shape("pem_block",
          "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretBody\n"
          "-----END RSA PRIVATE KEY-----\ndone", "MIIEowIBAAKCAQEAsecretBody"),
    Shape("pem_body_line", f"line\n{B64_LINE}\nnext", B64_LINE),
    Shape("url_credentials", "db postgres://admin:s3cretpass@db.example.com/x", "s3cretpass"),
    Shape("bearer", "Authorization: Bearer abcdefghijklmnopqrstuvwx==", "abcdefghijklmnopqrstuvwx"),
    Shape("basic_auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    Shape("token_value", "token abcdefghijklmnop1234 was used", "abcdefghijklmnop1234"),
    Shape("token_assigned", "Token: zzzz9999 was used", "zzzz9999"),
    Shape("api_key_json", '{"api_key": "abcd1234efgh", "other": 1}', "abcd1234efgh"),
    Shape("key_assigned", "key=qwerty7890 was used", "qwerty7890"),
    Shape("api_key_header", "x-api-key: hdr0123456789 sent", "hdr0123456789"),
    Shape("secret_assigned", "client_secret=cs9f8e7d6c5b sent", "cs9f8e7d6c5b"),
    Shape("password", "PASSWORD='hunter22' then", "hunter22"),
    Shape("passwd", "passwd: geheim123 then", "geheim123"),
    Shape("pwd", "pwd=xyzw1234 then", "xyzw1234"),
    Shape("credentials", "credentials=foo/bar/baz then", "foo/bar/baz"),
    Shape("query_signature", "GET https://h.example/cb?sig=Zm9vYmFyYmF6&x=1", "Zm9vYmFyYmF6"),
    Shape("query_token", "GET https://h.example/cb?a=1&access_token=at12345xyz", "at12345xyz"),
)

#: A configured secret (the loader registers it) that has no recognizable shape.
REGISTERED = "plain-looking-configured-value"
#: A secret-named variable of the environment (or `.env`), not referenced by the config.
ENV_NAME = "HERMES_SHAPES_TEST_API_TOKEN"
ENV_VALUE = "env-held-credential-77"
