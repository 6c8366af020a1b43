from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "tierlab.scenarios"
    label = "scenarios"
    verbose_name = "Scenarios and runs"
