"""Seed the core entry-kind vocabulary (weights from ``002_*``: decision 3 … container −3)."""

from django.db import migrations

CORE_KINDS = [
    # name, weight, container, structural, description
    ("decision", 3, False, False, "A choice that was made and why."),
    ("architecture", 3, False, False, "How the system is put together."),
    ("goal", 2, False, False, "Something the team is working towards."),
    ("risk", 2, False, False, "Something that could go wrong."),
    ("lesson", 2, False, False, "What was learned the hard way."),
    ("gotcha", 2, False, False, "A trap and how to avoid it."),
    ("recipe", 2, False, False, "A concrete working procedure."),
    ("playbook", 2, False, False, "A multi-step procedure, returned whole."),
    ("policy", 2, False, False, "A rule the organisation follows."),
    ("gap", 1, False, False, "Something known to be missing."),
    ("fact", 1, False, False, "A plain fact."),
    ("step", 1, False, False, "A step of a process."),
    ("decision_point", 1, False, False, "A branch in a process."),
    ("artifact", 1, False, False, "Something a process produces or needs."),
    ("role", 1, False, False, "A role that owns work."),
    ("team", 1, False, False, "A team."),
    ("person", 1, False, False, "A person."),
    ("service", 0, False, True, "A running service or system component."),
    ("process", -3, True, False, "A business process (container of steps)."),
    ("container", -3, True, False, "Groups other entries: epic, objective, milestone."),
    ("structural", 0, False, True, "Names a part of the system."),
    ("other", 1, False, False, "Anything else."),
]


def seed(apps, schema_editor):
    EntryKind = apps.get_model("kb", "EntryKind")
    for name, weight, container, structural, description in CORE_KINDS:
        EntryKind.objects.update_or_create(
            bank=None,
            name=name,
            defaults={"weight": weight, "container": container, "structural": structural, "description": description},
        )


def unseed(apps, schema_editor):
    apps.get_model("kb", "EntryKind").objects.filter(bank=None, name__in=[k[0] for k in CORE_KINDS]).delete()


class Migration(migrations.Migration):
    dependencies = [("kb", "0003_search_columns")]
    operations = [migrations.RunPython(seed, unseed)]
