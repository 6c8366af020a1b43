from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class CatalogConfig(AppConfig):
    name = "tierlab.catalog"
    label = "catalog"
    verbose_name = "Catalog"

    def ready(self):
        from tierlab.catalog.lookups import forget_catalog
        from tierlab.catalog.models import Accelerator, ModelPreset, NodeTemplate

        def changed(sender, **kwargs):       # an edit here is seen by the next estimate
            forget_catalog()

        for model in (Accelerator, ModelPreset, NodeTemplate):
            post_save.connect(changed, sender=model, weak=False, dispatch_uid=f"catalog-{model.__name__}-save")
            post_delete.connect(changed, sender=model, weak=False, dispatch_uid=f"catalog-{model.__name__}-delete")
