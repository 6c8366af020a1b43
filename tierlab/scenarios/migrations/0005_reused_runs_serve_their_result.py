"""A run that reuses an identical run's result points at it (``reused_from``) and stores no
copy: ``Run.result`` became ``stored_result`` (same column, ``result``), read through the
``result`` property; the copies already stored are dropped (each was a whole report)."""

from django.db import migrations, models

import tierlab.scenarios.models


def drop_copies(apps, schema_editor):
    Run = apps.get_model("scenarios", "Run")
    Run.objects.filter(status="succeeded", reused_from__isnull=False,
                       reused_from__stored_result__isnull=False).update(stored_result=None)


def restore_copies(apps, schema_editor):
    Run = apps.get_model("scenarios", "Run")
    for run in Run.objects.filter(status="succeeded", reused_from__isnull=False, stored_result__isnull=True):
        Run.objects.filter(pk=run.pk).update(stored_result=Run.objects.get(pk=run.reused_from_id).stored_result)


class Migration(migrations.Migration):

    dependencies = [
        ("scenarios", "0004_cluster_profile"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameField("run", "result", "stored_result"),
                migrations.AlterField("run", "stored_result",
                                      models.JSONField(blank=True, db_column="result", null=True)),
            ],
            database_operations=[],      # the column keeps its name
        ),
        migrations.AlterField(
            model_name="run",
            name="reused_from",
            field=models.ForeignKey(blank=True, help_text="The run whose stored result this serves.", null=True,
                                    on_delete=tierlab.scenarios.models.hand_on_result, related_name="+",
                                    to="scenarios.run"),
        ),
        migrations.RunPython(drop_copies, restore_copies),
    ]
