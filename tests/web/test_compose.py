"""docker-compose.yml: the services, their healthchecks, and an environment for every setting.

No Docker engine runs here, so this reads the file as YAML, substitutes variables the way
``docker compose`` does (``${X:-default}``, ``${X:?error}``, ``$$``) and checks the result
loads as production settings that pass ``manage.py check --deploy``.
"""

import re
from pathlib import Path

import pytest
import yaml

from tests.web.test_production_settings import django_process

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]

# Read by settings.py but meaningless in the stack: local folders, Vite's dev server, tests.
NOT_IN_COMPOSE = {"TIERLAB_VAR_DIR", "CELERY_BROKER_DIR", "VITE_DEV_MODE", "VITE_DEV_SERVER_PORT",
                  "TIERLAB_TEST_TASK_SLEEP_S", "TIERLAB_TEST_TASK_STUCK"}


def settings_variables() -> set[str]:
    source = (ROOT / "tierlab" / "settings.py").read_text()
    return set(re.findall(r'env_\w+\(\s*"([A-Z0-9_]+)"', source))


def substitute(value: str, env: dict) -> str:
    """docker compose's interpolation, the subset this file uses."""
    def one(match):
        name, op, word = match.group(1), match.group(2), match.group(3)
        if name is None:                      # $$
            return "$"
        current = env.get(name, "")
        if op == ":-":
            return current or word
        if op == ":?":
            if not current:
                raise ValueError(f"{name}: {word}")
            return current
        return current
    return re.sub(r"\$\$|\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}", one, value)


def test_it_has_the_four_services_each_with_a_healthcheck():
    assert set(SERVICES) == {"postgres", "redis", "web", "worker"}
    for name, service in SERVICES.items():
        assert service["healthcheck"]["test"], name
        assert service.get("restart") == "unless-stopped", name


def test_web_migrates_then_serves_with_gunicorn_and_is_checked_on_healthz():
    command = " ".join(SERVICES["web"]["command"])
    steps = ["check --deploy", "migrate", "collectstatic", "load_catalog", "gunicorn tierlab.wsgi"]
    positions = [command.index(step) for step in steps]
    assert positions == sorted(positions), command
    assert "/healthz" in " ".join(SERVICES["web"]["healthcheck"]["test"])
    assert SERVICES["web"]["depends_on"] == {"postgres": {"condition": "service_healthy"},
                                             "redis": {"condition": "service_healthy"}}


def test_the_worker_reads_the_run_queue_and_answers_pings():
    worker = SERVICES["worker"]
    command = " ".join(worker["command"])
    assert "celery -A tierlab worker" in command and '--queues "$$TIERLAB_RUN_QUEUE"' in command
    assert "--hostname" in command
    assert "inspect ping" in worker["healthcheck"]["test"][1]
    assert worker["depends_on"]["web"]["condition"] == "service_healthy"   # after migrations


def test_redis_keeps_queued_runs_across_a_restart():
    assert "--appendonly" in SERVICES["redis"]["command"]
    assert SERVICES["redis"]["volumes"] and SERVICES["postgres"]["volumes"]


def test_web_and_worker_share_one_environment_with_every_setting():
    env = SERVICES["web"]["environment"]
    assert SERVICES["worker"]["environment"] == env
    missing = settings_variables() - NOT_IN_COMPOSE - set(env)
    assert not missing, f"settings read {sorted(missing)} but docker-compose.yml does not set them"
    assert env["DEBUG"] == "0"
    assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"


def configuration_table_variables() -> set[str]:
    """The variables README's Configuration table has a row for (first column)."""
    section = (ROOT / "README.md").read_text().split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z0-9_]+)`", row.split("|")[1])}


def variables_read_outside_settings() -> set[str]:
    """What the stack reads besides settings.py: compose's environment (gunicorn reads
    WEB_CONCURRENCY and GUNICORN_CMD_ARGS itself), gunicorn.conf.py's counts, the Procfile's and
    the scripts' ``${X:-default}``."""
    names = set(SERVICES["web"]["environment"])
    names |= set(re.findall(r'_count\(\s*"([A-Z0-9_]+)"', (ROOT / "gunicorn.conf.py").read_text()))
    for path in [ROOT / "Procfile", *sorted((ROOT / "scripts").iterdir())]:
        names |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*):-", path.read_text()))
    return names


def test_the_readme_documents_every_setting():
    # a row of its own in the Configuration table, not a mention elsewhere (VITE_DEV_SERVER_PORT
    # was only inside VITE_DEV_MODE's row; WEB_CONCURRENCY, GUNICORN_CMD_ARGS and
    # WORKER_LOG_LEVEL, read by gunicorn and the Procfile, had none)
    documented = configuration_table_variables()
    missing = sorted((settings_variables() | variables_read_outside_settings()) - documented)
    assert not missing, f"README's Configuration table lacks {missing}"


def test_it_needs_a_secret_key():
    with pytest.raises(ValueError, match="SECRET_KEY"):
        substitute(SERVICES["web"]["environment"]["SECRET_KEY"], {})


def test_its_environment_passes_the_production_checks():
    host = {"SECRET_KEY": "compose-" + "Zq8w" * 12}
    env = {name: substitute(str(value), host) for name, value in SERVICES["web"]["environment"].items()}
    assert env["GUNICORN_CMD_ARGS"].startswith("--worker-class")
    result = django_process(**{**env, "VITE_DEV_MODE": "1"})
    assert result.returncode == 0, result.stderr
    assert "tierlab." not in result.stderr
