from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "tierlab.catalog"
    label = "catalog"
    verbose_name = "Catalog"
