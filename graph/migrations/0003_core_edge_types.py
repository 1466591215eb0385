"""Seed the thirteen core relations of ``000_*`` and ``other``."""

from django.db import migrations

# name, inverse, fold_role, transitive, neighbor_priority, score_weight, workflow_role, description
CORE_TYPES = [
    ("cites", "cited_by", "", False, 30, 1, "", "Refers to the other entry by id in its text."),
    ("see_also", "see_also", "", False, 10, 1, "", "Loosely related; read together."),
    ("part_of", "has_part", "parent", True, 50, 1, "", "Belongs to the target (playbook, process, container)."),
    ("supersedes", "superseded_by", "dominates", True, 90, 3, "", "Replaces the target."),
    ("split_from", "split_into", "parent", False, 40, 1, "", "Was split out of the target."),
    ("derived_from", "derives", "parent", True, 40, 1, "", "Builds on the target."),
    ("corrects", "corrected_by", "dominates", False, 100, 2, "", "Fixes something the target gets wrong."),
    ("clarifies", "clarified_by", "dominates", False, 80, 2, "", "Makes the target precise."),
    ("conflicts_with", "conflicts_with", "", False, 100, 2, "", "Disagrees with the target; one is wrong."),
    ("precedes", "follows", "", True, 50, 1, "precedes", "Comes before the target in a process."),
    ("requires", "required_by", "", True, 60, 1, "requires", "Needs the target to proceed."),
    ("produces", "produced_by", "", False, 50, 1, "produces", "Makes the target."),
    ("owned_by", "owns", "", False, 40, 1, "owned_by", "The target (role, team, person) owns it."),
    ("other", "other", "", False, 5, 1, "", "An unrecognised relation kept as text for later promotion."),
]


def seed(apps, schema_editor):
    EdgeType = apps.get_model("graph", "EdgeType")
    for name, inverse, fold_role, transitive, priority, weight, workflow_role, description in CORE_TYPES:
        EdgeType.objects.update_or_create(
            bank=None,
            name=name,
            defaults={
                "inverse": inverse, "fold_role": fold_role, "transitive": transitive,
                "neighbor_priority": priority, "score_weight": weight, "workflow_role": workflow_role,
                "description": description,
            },
        )


def unseed(apps, schema_editor):
    apps.get_model("graph", "EdgeType").objects.filter(bank=None, name__in=[t[0] for t in CORE_TYPES]).delete()


class Migration(migrations.Migration):
    dependencies = [("graph", "0002_edge_database_rules")]
    operations = [migrations.RunPython(seed, unseed)]
