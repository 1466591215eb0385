"""The "managers" group: may view gap-report pages and change findings.

Permissions are created here (not left to post_migrate) so the group can hold them at once;
post_migrate later finds them present and adds nothing twice.
"""

from django.db import migrations

GROUP = "managers"
# (model, codename, name)
PERMISSIONS = [
    ("gapreport", "view_gap_reports", "Can view workflow gap reports (manager pages)"),
    ("gapreport", "view_gapreport", "Can view gap report"),
    ("finding", "change_finding", "Can change finding"),
    ("finding", "view_finding", "Can view finding"),
]


def create_group(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.get_or_create(name=GROUP)
    for model, codename, name in PERMISSIONS:
        content_type, _ = ContentType.objects.get_or_create(app_label="workflows", model=model)
        permission, _ = Permission.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
        group.permissions.add(permission)


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("workflows", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_group, remove_group)]
