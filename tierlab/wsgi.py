"""WSGI entry point (gunicorn tierlab.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tierlab.settings")

application = get_wsgi_application()
