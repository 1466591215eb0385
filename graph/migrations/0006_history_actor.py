"""History rows get their own ``history_actor`` column (who made the change). Edge and Alias
rows have an ``actor`` column of their own, which history must track unchanged so that a
revert restores it exactly."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("graph", "0005_analytics"), ("kb", "0007_history_actor")]
    operations = [
        migrations.AddField(
            model_name="historicaledge",
            name="history_actor",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="historicalalias",
            name="history_actor",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
    ]
