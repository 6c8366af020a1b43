"""tierlab: the Django project (web pages, REST API, Celery worker) around `simulation`."""

from tierlab.celery import app as celery_app

__all__ = ["celery_app"]
