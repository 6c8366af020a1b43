"""Headless Chromium for the browser tests, driven by Playwright's Python API.

Playwright never downloads a browser here: it launches the system's Chromium
(``/usr/bin/chromium`` from Debian, or ``$CHROMIUM``). The pages need the built front
end (``cd frontend && npm ci && npm run build``): without it, or without Chromium, the
tests are skipped locally and fail under CI (``CI=true``), where both must be there.
"""

import os
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run
# beside one unless told it is fine (the ORM calls here are plain synchronous ones).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "frontend" / "dist" / ".vite" / "manifest.json"
SCREENSHOTS = Path(os.environ.get("TIERLAB_SCREENSHOT_DIR", ROOT / "test-results" / "browser"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


def _chromium() -> str | None:
    candidate = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
    if Path(candidate).exists():
        return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _missing(reason: str):
    if os.environ.get("CI"):
        pytest.fail(reason + " (required under CI)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    executable = _chromium()
    if executable is None:
        _missing("no Chromium at /usr/bin/chromium (apt-get install chromium) or $CHROMIUM")
    if not MANIFEST.exists():
        _missing(f"front end not built: {MANIFEST.relative_to(ROOT)} missing (cd frontend && npm ci && npm run build)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright Python package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def built_frontend(settings):
    """Pages use the real Vite manifest (frontend/dist), whatever earlier tests stubbed."""
    from django_vite.core.asset_loader import DjangoViteAssetLoader

    settings.DJANGO_VITE = {"default": {**settings.DJANGO_VITE["default"], "dev_mode": False,
                                        "manifest_path": MANIFEST}}
    DjangoViteAssetLoader._instance = None
    yield MANIFEST
    DjangoViteAssetLoader._instance = None


@pytest.fixture
def page(browser, built_frontend, request):
    """A fresh browser context and page; a screenshot of the page is kept when a test fails."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.js_errors = errors
    yield pg
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        try:
            pg.screenshot(path=str(SCREENSHOTS / f"FAILED-{request.node.name}.png"), full_page=True)
        except Exception:  # the page may be gone; the failure itself is what matters
            pass
    context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.rep_call = report
    return report


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def log_in(page, base_url: str, user) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", user.raw_password)
    page.press("input[name=password]", "Enter")
    page.wait_for_url(f"{base_url}/")


def wait_until(page, expression: str, arg=None, timeout_s: float = 10.0) -> object:
    """Poll ``expression`` from the test side until it is truthy; return its value.

    Playwright's ``wait_for_function`` re-evaluates a string predicate inside the page, which
    the Content Security Policy (no 'unsafe-eval') blocks once it has to poll; ``evaluate``
    goes through the debugging protocol and is not subject to the page's CSP.
    """
    import time
    deadline = time.monotonic() + timeout_s
    while True:
        value = page.evaluate(expression, arg) if arg is not None else page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_s} s: {expression}")
        page.wait_for_timeout(50)
