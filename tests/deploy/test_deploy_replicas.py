"""The replicas example (deploy/compose.replicas.yml): PostgreSQL, three replicas with a
profile volume each and one shared config, and a load balancer whose upstreams are the
webhook listeners that config opens."""

from __future__ import annotations

import re

import yaml

from gateway.config.load import parse_config
from tests.deploy.conftest import REPO

DEPLOY = REPO / "deploy"


def test_compose_runs_three_replicas_on_one_database_behind_a_load_balancer() -> None:
    doc = yaml.safe_load((DEPLOY / "compose.replicas.yml").read_text())
    services = doc["services"]
    replicas = {n: s for n, s in services.items() if n.startswith("replica")}
    assert len(replicas) == 3
    homes = set()
    for svc in replicas.values():
        data = next(v for v in svc["volumes"] if v.endswith(":/data"))
        homes.add(data.split(":")[0])
        assert any(v.endswith(":/etc/hermes/config.yaml:ro") for v in svc["volumes"])
        assert svc["depends_on"]["db"]["condition"] == "service_healthy"
        assert int(svc["stop_grace_period"].rstrip("s")) > 30
    assert len(homes) == 3 and homes <= set(doc["volumes"])  # a profile volume each
    assert services["db"]["image"].startswith("postgres:")
    assert "lb" in services


def test_the_shared_config_is_valid_and_matches_the_load_balancer() -> None:
    data = yaml.safe_load((DEPLOY / "replicas" / "config.example.yaml").read_text())
    env = {"OPENAI_API_KEY": "sk-example", "TELEGRAM_BOT_TOKEN": "1:example",
           "HERMES_PG_PASSWORD": "pw", "TELEGRAM_WEBHOOK_SECRET": "secret"}
    config, _warnings, _unknown = parse_config(data, env=env)
    assert config.storage.backend == "postgres"
    assert config.storage.dsn_value() == "postgresql://hermes:pw@db:5432/hermes"
    tg = config.platforms.enabled_blocks()["telegram"]
    nginx = (DEPLOY / "replicas" / "nginx.conf").read_text()
    assert tg.mode == "webhook" and tg.webhook.host == "0.0.0.0"
    upstream = re.search(r"upstream telegram \{(.*?)\}", nginx, re.S)
    assert upstream is not None
    assert re.findall(r"server (replica\d):(\d+)", upstream.group(1)) == [
        (f"replica{i}", str(tg.webhook.port)) for i in (1, 2, 3)]
    assert f"location {tg.webhook.path} " in nginx
