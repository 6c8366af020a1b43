from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "tierlab.scenarios"
    label = "scenarios"
    verbose_name = "Scenarios and runs"

    # the catalog's own app forgets its cached preset tables when a row changes
