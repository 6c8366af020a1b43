from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "tierlab.scenarios"
    label = "scenarios"
    verbose_name = "Scenarios and runs"

    # the catalog's own app forgets its cached preset tables when a row changes

    def ready(self):
        from tierlab.catalog.lookups import register_lazy_table
        from tierlab.scenarios.profiles import ProfileTable

        register_lazy_table("profiles", ProfileTable)     # cluster.profile by id, read when named
