from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class ScenariosConfig(AppConfig):
    name = "tierlab.scenarios"
    label = "scenarios"
    verbose_name = "Scenarios and runs"

    def ready(self):
        from tierlab.catalog.models import Accelerator, ModelPreset, NodeTemplate
        from tierlab.scenarios import services

        def changed(sender, **kwargs):       # an edit here is seen by the next estimate
            services.forget_catalog()

        for model in (Accelerator, ModelPreset, NodeTemplate):
            post_save.connect(changed, sender=model, weak=False, dispatch_uid=f"catalog-{model.__name__}-save")
            post_delete.connect(changed, sender=model, weak=False, dispatch_uid=f"catalog-{model.__name__}-delete")
