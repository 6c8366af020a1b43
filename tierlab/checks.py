"""System checks for configuration problems that would otherwise show as blank pages."""

import re
from pathlib import Path

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


@register()
def check_vite_manifest(app_configs=None, **kwargs):
    """tierlab.E001: the front end's Vite manifest must exist unless Vite runs in dev mode."""
    config = settings.DJANGO_VITE["default"]
    if config.get("dev_mode"):
        return []
    path = Path(config["manifest_path"])
    if path.is_file():
        return []
    return [Error(
        f"The front end is not built: Vite manifest {path} is missing, so pages would "
        "load without their scripts and styles.",
        hint="Build it: cd frontend && npm ci && npm run build (./scripts/start does this), "
             "or set VITE_DEV_MODE=1 while `npm run dev` serves the assets.",
        id="tierlab.E001",
    )]


# ---------------------------------------------------------------- production configuration
# Settings read from the environment fail at import on a malformed value (tierlab.env);
# these catch values that parse but are unsafe or contradict each other. The security ones
# apply when DEBUG is off.
DEV_SECRET_KEYS = {"dev-only-insecure-key-do-not-use-in-production"}
MIN_SECRET_KEY_LENGTH = 32
HSTS_PRELOAD_MIN_S = 31_536_000      # one year: what hstspreload.org requires
_ORIGIN = re.compile(r"^https?://(\*\.)?[^/\s?#*]+$")


@register(Tags.security)
def check_secret_key(app_configs=None, **kwargs):
    """tierlab.E002: with DEBUG off, SECRET_KEY must be long and not the development key."""
    key = settings.SECRET_KEY
    if settings.DEBUG or (key not in DEV_SECRET_KEYS and len(key) >= MIN_SECRET_KEY_LENGTH
                          and not key.startswith("django-insecure-")):
        return []
    return [Error(
        f"SECRET_KEY is insecure: it is {'the development key' if key in DEV_SECRET_KEYS else f'{len(key)} characters long'} "
        "while DEBUG is off; sessions, password resets and CSRF tokens could be forged.",
        hint=f"Set SECRET_KEY to at least {MIN_SECRET_KEY_LENGTH} random characters, e.g. "
             "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'.",
        id="tierlab.E002")]


@register(Tags.security)
def check_allowed_hosts(app_configs=None, **kwargs):
    """tierlab.E003: ALLOWED_HOSTS empty with DEBUG off; tierlab.W002: it contains "*"."""
    if settings.DEBUG:
        return []
    if not settings.ALLOWED_HOSTS:
        return [Error("ALLOWED_HOSTS is empty while DEBUG is off: every request would be refused "
                      "with 400.", hint="Set ALLOWED_HOSTS to the comma-separated host names of "
                      "the site, e.g. tierlab.example.com.", id="tierlab.E003")]
    if "*" in settings.ALLOWED_HOSTS:
        return [Warning("ALLOWED_HOSTS contains '*': any Host header is accepted, so links in "
                        "password-reset mail can be poisoned.",
                        hint="List the real host names instead.", id="tierlab.W002")]
    return []


@register(Tags.security)
def check_csrf_trusted_origins(app_configs=None, **kwargs):
    """tierlab.E004: every CSRF_TRUSTED_ORIGINS entry is scheme://host[:port], nothing more."""
    bad = [origin for origin in settings.CSRF_TRUSTED_ORIGINS if not _ORIGIN.match(origin)]
    if not bad:
        return []
    return [Error(f"CSRF_TRUSTED_ORIGINS has entries that are not origins: {', '.join(map(repr, bad))}; "
                  "a login form posted from there would fail with 403.",
                  hint="Write each as scheme://host[:port] with http or https and no path, "
                       "e.g. https://tierlab.example.com.", id="tierlab.E004")]


@register(Tags.security)
def check_https(app_configs=None, **kwargs):
    """tierlab.E005: HSTS preload needs one year and subdomains; tierlab.W001: cookies over HTTP;
    tierlab.W003: an HTTPS redirect behind a proxy without SECURE_PROXY_SSL_HEADER."""
    problems = []
    if settings.SECURE_HSTS_PRELOAD and (settings.SECURE_HSTS_SECONDS < HSTS_PRELOAD_MIN_S
                                         or not settings.SECURE_HSTS_INCLUDE_SUBDOMAINS):
        problems.append(Error(
            f"SECURE_HSTS_PRELOAD is on but SECURE_HSTS_SECONDS is {settings.SECURE_HSTS_SECONDS} "
            f"and SECURE_HSTS_INCLUDE_SUBDOMAINS is {settings.SECURE_HSTS_INCLUDE_SUBDOMAINS}: "
            "browsers' preload lists refuse such a site.",
            hint=f"Set SECURE_HSTS_SECONDS>={HSTS_PRELOAD_MIN_S} and "
                 "SECURE_HSTS_INCLUDE_SUBDOMAINS=1, or SECURE_HSTS_PRELOAD=0.",
            id="tierlab.E005"))
    if not settings.DEBUG and not (settings.SESSION_COOKIE_SECURE and settings.CSRF_COOKIE_SECURE):
        problems.append(Warning(
            "Session and CSRF cookies are sent over plain HTTP (SECURE_COOKIES=0) while DEBUG "
            "is off: anyone on the network path can take over a login.",
            hint="Serve the site over HTTPS and set SECURE_COOKIES=1 (the default when DEBUG=0).",
            id="tierlab.W001"))
    if settings.SECURE_SSL_REDIRECT and settings.SECURE_PROXY_SSL_HEADER is None \
            and not settings.DEBUG:
        problems.append(Warning(
            "SECURE_SSL_REDIRECT is on but SECURE_PROXY_SSL_HEADER is off: behind a proxy that "
            "terminates TLS every request looks like HTTP and redirects forever.",
            hint="If a proxy terminates TLS and sets X-Forwarded-Proto, set "
                 "SECURE_PROXY_SSL_HEADER=1; if gunicorn itself serves TLS, ignore this.",
            id="tierlab.W003"))
    return problems


@register()
def check_run_limits(app_configs=None, **kwargs):
    """tierlab.E006: soft < hard time limit; tierlab.E007: Redis visibility timeout > hard limit;
    tierlab.W004: the test-only sleep is set."""
    problems = []
    soft, hard = settings.CELERY_TASK_SOFT_TIME_LIMIT, settings.CELERY_TASK_TIME_LIMIT
    if soft >= hard:
        problems.append(Error(
            f"RUN_SOFT_TIME_LIMIT_S ({soft}) is not below RUN_TIME_LIMIT_S ({hard}): the hard "
            "limit kills a run before it can record why it stopped.",
            hint="Make the soft limit a few seconds shorter than the hard one.", id="tierlab.E006"))
    visibility = (settings.CELERY_BROKER_TRANSPORT_OPTIONS or {}).get("visibility_timeout")
    if visibility is not None and visibility <= hard:
        problems.append(Error(
            f"CELERY_VISIBILITY_TIMEOUT_S ({visibility}) is not above RUN_TIME_LIMIT_S ({hard}): "
            "Redis would hand a run that is still running to a second worker.",
            hint="Leave CELERY_VISIBILITY_TIMEOUT_S unset (time limit + 30 s) or make it longer "
                 "than RUN_TIME_LIMIT_S.", id="tierlab.E007"))
    if settings.TIERLAB_TEST_TASK_SLEEP_S:
        problems.append(Warning(
            f"TIERLAB_TEST_TASK_SLEEP_S is {settings.TIERLAB_TEST_TASK_SLEEP_S}: every run sleeps "
            "that long on purpose (a test setting).", hint="Unset it outside tests.",
            id="tierlab.W004"))
    return problems
