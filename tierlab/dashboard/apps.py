from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "tierlab.dashboard"
    label = "dashboard"
    verbose_name = "Comparisons, sweeps and share links"
