"""hermes_common.lean.defer_aiohttp_ca (with hermes_common.tls_context): aiohttp's TLS client
contexts load the CA bundle when first used.

What a user would notice if it were wrong: a TLS connection that verifies nothing, or one
that trusts nothing. So the contexts are checked end to end against local HTTPS servers:
a certificate from the CA in `SSL_CERT_FILE` is accepted (and that file is read at first
use, after import), one from another CA is refused, and `ssl=False` still connects."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import trustme

from hermes_common.tls_context import DeferredCAContext, deferring

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import asyncio, json, os, ssl, sys
import gateway  # installs the deferral, as every gateway process does
import aiohttp
from aiohttp import connector, web
import trustme

ver, unver = connector._SSL_CONTEXT_VERIFIED, connector._SSL_CONTEXT_UNVERIFIED
ref = ssl.create_default_context()
out = {
    "types": [type(ver).__name__, type(unver).__name__],
    "pending": [ver._hermes_ca_pending, unver._hermes_ca_pending],
    "like_default": [ver.verify_mode == ref.verify_mode, ver.check_hostname == ref.check_hostname,
                     ver.options == ref.options, ver.minimum_version == ref.minimum_version],
    "unverified": [unver.verify_mode == ssl.CERT_NONE, unver.check_hostname],
    "ssl_patched_after_import": "set_default_verify_paths" in ssl.SSLContext.__dict__,
}

trusted, other = trustme.CA(), trustme.CA()
ca_file = os.path.join(sys.argv[1], "ca.pem")
trusted.cert_pem.write_to_path(ca_file)
os.environ["SSL_CERT_FILE"] = ca_file  # after the import: read when first used

async def serve(ca):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(ctx)
    app = web.Application()
    app.router.add_get("/", lambda r: web.Response(text="hello"))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]

async def get(port, **kw):
    async with aiohttp.ClientSession() as s:
        try:
            async with s.get(f"https://localhost:{port}/", **kw) as r:
                return await r.text()
        except aiohttp.ClientConnectorCertificateError:
            return "refused: certificate"

async def main():
    good, good_port = await serve(trusted)
    bad, bad_port = await serve(other)
    out["trusted"] = await get(good_port)
    out["pending_after_use"] = ver._hermes_ca_pending
    out["other_ca"] = await get(bad_port)
    out["other_ca_ssl_false"] = await get(bad_port, ssl=False)
    out["ca_loaded"] = [c["subject"] for c in ver.get_ca_certs()] == [
        c["subject"] for c in ssl.create_default_context(cafile=ca_file).get_ca_certs()]
    await good.cleanup()
    await bad.cleanup()

asyncio.run(main())
print(json.dumps(out))
"""


def test_aiohttp_verifies_against_the_ca_bundle_it_loads_at_first_use(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SSL_CERT_FILE", None)
    env.pop("SSL_CERT_DIR", None)
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["types"] == ["DeferredCAContext", "DeferredCAContext"]
    assert got["pending"] == [True, True]  # nothing parsed at import
    assert all(got["like_default"])  # otherwise create_default_context's context
    assert got["unverified"] == [True, False]
    assert got["ssl_patched_after_import"] is False
    assert got["trusted"] == "hello"
    assert got["pending_after_use"] is False
    assert got["ca_loaded"] is True
    assert got["other_ca"] == "refused: certificate"  # still verifies
    assert got["other_ca_ssl_false"] == "hello"


def test_a_deferred_context_loads_the_bundle_once_when_first_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with deferring():
        ctx = ssl.create_default_context()
        plain = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        plain.set_default_verify_paths()
    assert "set_default_verify_paths" not in ssl.SSLContext.__dict__
    assert isinstance(ctx, DeferredCAContext) and isinstance(ctx, ssl.SSLContext)
    assert isinstance(plain, DeferredCAContext)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    stats = ctx.cert_store_stats()
    assert stats["x509_ca"] == 1  # the bundle of the moment of first use
    ca2 = trustme.CA()
    ca2.cert_pem.write_to_path(str(ca_file))
    assert ctx.cert_store_stats() == stats  # loaded once: a later change is not read


def test_someone_elses_context_class_loads_its_bundle_at_once() -> None:
    class Theirs(ssl.SSLContext):
        pass

    with deferring():
        ctx = Theirs(ssl.PROTOCOL_TLS_CLIENT)
        ctx.set_default_verify_paths()
    assert type(ctx) is Theirs and not hasattr(ctx, "_hermes_ca_pending")
