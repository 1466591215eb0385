from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("kb", "0006_search_tuning")]
    operations = [
        migrations.RenameField(model_name="historicalentry", old_name="actor", new_name="history_actor"),
    ]
