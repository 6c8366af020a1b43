"""README's API examples (the ``sh`` blocks that call ``$API``) match the real API and run as
they are: each takes the ids it needs from the answers before it (``jq -r .id``), none is
hard-coded.

Two checks: every ``curl`` names a path, method, query parameters and body keys of the
committed schema (docs/openapi.yaml, which test_schema_snapshot.py holds to the code); and the
blocks, in order, in one bash, against a live server and a real Celery worker, get a 2xx
answer to every request (but the few whose comment says otherwise: a cancel of what already
finished, a page past the last). Written because the examples used ids such as
``/scenarios/7/runs/``, which exist only on the machine they were written on (newcomer
check)."""

import json
import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
SCHEMA = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
BLOCKS = [b for b in re.findall(r"```sh\n(.*?)```", README, re.S) if "$API" in b]
PREFIX = "/api/v1"

# Requests whose README comment says they may answer otherwise, and what they may answer.
MAY_ANSWER = {r"/cancel/$": {200, 400},                      # "once finished: 400 already finished"
              r"[?&]page=2\b": {200, 404}}                    # "a page past the last: 404"


def curl_commands(block: str) -> list[dict]:
    """Each ``curl`` of a block: its method, URL (after ``$API``) and ``-d`` body."""
    tokens = shlex.split(block.replace("\\\n", " "), comments=True)
    out, i = [], 0
    while i < len(tokens):
        if not re.fullmatch(r"(\w+=)?(\$\()?curl", tokens[i]):
            i += 1
            continue
        args, i = [], i + 1
        while i < len(tokens) and tokens[i] not in ("|", ";", "&&") and not tokens[i].endswith("curl"):
            args.append(tokens[i])
            i += 1
        url = next(a for a in args if "$API" in a).split("$API", 1)[1].rstrip(")")
        body = args[args.index("-d") + 1] if "-d" in args else None
        method = args[args.index("-X") + 1] if "-X" in args else ("POST" if body is not None else "GET")
        out.append({"method": method, "url": url, "body": body})
    return out


COMMANDS = [c for b in BLOCKS for c in curl_commands(b)]


def operation(method: str, url: str):
    path = url.split("?", 1)[0]
    for template, ops in SCHEMA["paths"].items():
        pattern = re.escape(template[len(PREFIX):]).replace(r"\{", "{").replace(r"\}", "}")
        if re.fullmatch(re.sub(r"\{[^}]+\}", r"[^/]+", pattern), path):
            return template, ops.get(method.lower())
    return None, None


def _schema(ref_or_schema: dict) -> dict:
    ref = ref_or_schema.get("$ref")
    return SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else ref_or_schema


def test_the_examples_are_found():
    assert len(BLOCKS) == 3, "the Examples, Calibrating and Planner blocks"
    assert len(COMMANDS) >= 25
    assert {c["method"] for c in COMMANDS} == {"GET", "POST"}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: f"{c['method']} {c['url']}")
def test_each_example_is_an_operation_of_the_api_with_its_fields(command):
    url = command["url"]
    # an id is a shell variable from an earlier answer ($SCENARIO), never a number
    assert not re.search(r"/\d+(/|$)", url.split("?", 1)[0]), f"hard-coded id in {url}"
    template, op = operation(command["method"], url)
    assert op is not None, f"{command['method']} {url}: no such operation in docs/openapi.yaml ({template})"
    query = url.split("?", 1)[1] if "?" in url else ""
    declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
    for name in (pair.split("=", 1)[0] for pair in query.split("&") if pair):
        assert name in declared, f"{url}: ?{name} is not a parameter of {template} ({sorted(declared)})"
    if command["body"] is not None:
        body = json.loads(re.sub(r"\$[A-Z_]+", "1", command["body"]))
        content = op["requestBody"]["content"]
        assert list(content) == ["application/json"], template
        fields = set(_schema(content["application/json"]["schema"]).get("properties", {}))
        assert set(body) <= fields, f"{template}: {sorted(set(body) - fields)} not in {sorted(fields)}"


# Logs each request's status and URL, and passes the body on (jq reads it from stdout).
CURL_LOG = r'''
curl() {
  local out url a
  for a in "$@"; do case $a in http*) url=$a;; esac; done
  out=$(command curl --write-out '\n%{http_code}' "$@") || return $?
  printf '%s %s\n' "${out##*$'\n'}" "$url" >> "$README_STATUS_LOG"
  printf '%s\n' "${out%$'\n'*}"
}
'''


@pytest.mark.django_db(transaction=True)
def test_the_examples_run_in_order_against_a_live_server(live_url, user_admin, catalog, celery_worker, tmp_path):
    for tool in ("bash", "curl", "jq", "python3"):
        if shutil.which(tool) is None:
            if os.environ.get("CI"):
                pytest.fail(f"{tool} is needed for README's examples (required under CI)")
            pytest.skip(f"no {tool} (README's examples use it)")
    from rest_framework.authtoken.models import Token

    assert re.search(r"^TOKEN=\$\(.*drf_create_token admin", BLOCKS[0], re.M)
    script = "\n".join(line for block in BLOCKS for line in block.splitlines()
                       if not re.match(r"(TOKEN|API)=", line))          # this server's, below
    log = tmp_path / "status.log"
    env = dict(os.environ, TOKEN=Token.objects.create(user=user_admin).key, API=f"{live_url}{PREFIX}",
               README_STATUS_LOG=str(log))
    done = subprocess.run(["bash", "-c", "set -eo pipefail\n" + CURL_LOG + script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    answers = [line.split(" ", 1) for line in log.read_text().splitlines()]
    assert len(answers) >= len(COMMANDS), answers        # the plan's poll loop asks more than once
    for code, url in answers:
        assert "/null/" not in url, f"an id was not in the answer before: {url}"
        allowed = next((codes for pattern, codes in MAY_ANSWER.items() if re.search(pattern, url)), None)
        ok = int(code) in allowed if allowed else 200 <= int(code) < 300
        assert ok, f"{code} from {url}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
    from tierlab.dashboard.models import Plan, ShareLink, Sweep
    from tierlab.scenarios.models import ClusterProfile, Run, Scenario

    assert Scenario.objects.filter(name="70B on 2 nodes").count() == 1
    assert Run.objects.filter(scenario__name="70B on 2 nodes").count() == 1      # the replay started none
    assert Sweep.objects.count() == 1 and ClusterProfile.objects.count() == 1
    assert Plan.objects.get().status == "succeeded"
    assert ShareLink.objects.get().revoked_at is not None


def test_the_estimate_examples_fit():
    """Each estimate example asks of a scenario that fits (one that did not, a 70B on two
    nodes with eager attention, showed 803 GiB per GPU); a cluster profile changes the
    step's figures, not memory, so it is left out here."""
    from simulation import evaluate_dict

    bodies = [c["body"] for c in COMMANDS if c["url"].startswith("/estimate/")]
    assert len(bodies) >= 2
    for body in bodies:
        request = json.loads(re.sub(r'"profile": \$\w+', '"profile": null', body))
        report = evaluate_dict(request["scenario"])
        assert report["fits"], (body, report["violations"])
