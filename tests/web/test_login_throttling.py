"""Login throttling (django-axes): repeated failed logins lock a username out from that
address, on the site's login page and the admin's, with the project's real limit."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db.models import F

from tests.conftest import PASSWORD

PAGES = ["/accounts/login/", "/admin/login/"]


def log_in(client, url, username, password, address="127.0.0.1"):
    return client.post(url, {"username": username, "password": password, "next": "/"},
                       REMOTE_ADDR=address)


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def fail_until_locked(client, url, username, address="127.0.0.1"):
    """Wrong passwords until the limit; returns the last answer (the lockout)."""
    for k in range(settings.AXES_FAILURE_LIMIT - 1):
        r = log_in(client, url, username, "wrong", address)
        assert r.status_code == 200, f"failure {k + 1} already refused"
    return log_in(client, url, username, "wrong", address)


def test_the_real_limit_is_five_failures_and_a_fifteen_minute_lockout():
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


@pytest.mark.django_db
@pytest.mark.parametrize("url", PAGES)
def test_failed_logins_lock_the_user_out_even_with_the_right_password(client, user_admin, url):
    r = fail_until_locked(client, url, "admin")
    assert r.status_code == 429
    text = r.content.decode()
    assert "5 failed logins" in text and "locked for 15 minutes" in text and "even with the right password" in text
    r = log_in(client, url, "admin", user_admin.raw_password)
    assert r.status_code == 429 and not logged_in(client)
    assert client.get("/scenarios/").status_code == 302          # still sent to log in


@pytest.mark.django_db
def test_the_lockout_is_per_username_and_address(client, user_admin, owner):
    fail_until_locked(client, "/accounts/login/", "admin")
    r = log_in(client, "/accounts/login/", "owner", PASSWORD)           # another user, same address
    assert r.status_code == 302 and logged_in(client)
    client.logout()
    r = log_in(client, "/accounts/login/", "admin", "admin", address="10.9.8.7")   # same user elsewhere
    assert r.status_code == 302 and logged_in(client)


@pytest.mark.django_db
def test_axes_reset_unlocks(client, user_admin):
    fail_until_locked(client, "/admin/login/", "admin")
    call_command("axes_reset", verbosity=0)
    r = log_in(client, "/admin/login/", "admin", "admin")
    assert r.status_code == 302 and logged_in(client)


@pytest.mark.django_db
def test_after_the_cool_off_the_user_can_log_in(client, user_admin):
    from axes.models import AccessAttempt

    fail_until_locked(client, "/accounts/login/", "admin")
    assert log_in(client, "/accounts/login/", "admin", "admin").status_code == 429
    # 15 minutes pass (the attempts' times are moved back, not slept through)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    r = log_in(client, "/accounts/login/", "admin", "admin")
    assert r.status_code == 302 and r["Location"] == "/" and logged_in(client)


@pytest.mark.django_db
def test_a_successful_login_clears_the_count(client, user_admin):
    for _ in range(2):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            assert log_in(client, "/accounts/login/", "admin", "wrong").status_code == 200
        assert log_in(client, "/accounts/login/", "admin", "admin").status_code == 302
        client.logout()


@pytest.mark.django_db(transaction=True)
def test_the_lockout_holds_on_real_gunicorn_processes(user_admin, queue, procs, tmp_path):
    """Two gunicorn processes: the count lives in the database, so whichever takes a try sees it."""
    import re

    import httpx

    from tests.processes import start_gunicorn, worker_env

    web = start_gunicorn(tmp_path, worker_env(queue), workers=2)
    procs.append(web)
    with httpx.Client(base_url=web.url) as http:
        def attempt(password):
            page = http.get("/admin/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
            return http.post("/admin/login/", data={"username": "admin", "password": password,
                                                    "csrfmiddlewaretoken": token, "next": "/admin/"})

        answers = [attempt("wrong").status_code for _ in range(settings.AXES_FAILURE_LIMIT)]
        assert answers == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
        locked = attempt("admin")
        assert locked.status_code == 429 and "Too many failed logins" in locked.text
        assert http.get("/admin/").status_code == 302                  # not logged in
    pids = set(re.findall(r"\[(\d+)\] \[INFO\] Booting worker", web.log()))
    assert len(pids) == 2, web.log()
