"""The alerting rules shipped for the exporter's metrics (scripts/compose/prometheus-alerts.yml)
pass `promtool check rules` and their unit tests (`promtool test rules`, with input series and
the alerts expected of them, in prometheus-alerts.test.yml).

Needs no cluster, only promtool from Debian's `prometheus` package (fetched once into the
download cache); skipped with the reason when that cannot be had."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from support.prometheus import promtool_or_skip

pytestmark = pytest.mark.integration

COMPOSE_DIR = Path(__file__).resolve().parents[2] / "scripts" / "compose"
RULES = COMPOSE_DIR / "prometheus-alerts.yml"
RULE_TESTS = COMPOSE_DIR / "prometheus-alerts.test.yml"


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(promtool_or_skip()), *args], cwd=COMPOSE_DIR,
                          capture_output=True, text=True, timeout=120)


def test_the_shipped_rules_are_valid():
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 7 rules found" in checked.stdout


def test_every_shipped_rule_has_a_test_where_it_fires_and_one_where_it_does_not():
    rules = {rule["alert"] for group in yaml.safe_load(RULES.read_text())["groups"]
             for rule in group["rules"]}
    checks = [check for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
              for check in test["alert_rule_test"]]
    assert {check["alertname"] for check in checks if check["exp_alerts"]} == rules
    assert {check["alertname"] for check in checks if not check["exp_alerts"]} == rules


def test_every_shipped_rule_fires_when_and_only_when_its_tests_expect():
    tested = promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout
