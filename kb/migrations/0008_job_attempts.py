from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0007_history_actor"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="attempts",
            field=models.PositiveIntegerField(default=0),
        ),
    ]
