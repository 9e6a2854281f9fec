from django.db import models

from .components import Component
from .imports import ReproductionRun, ReproductionScenario


class RunComponent(models.Model):
    """What one scenario of an imported run ran — its framework or its backend — as the
    results file names it, with the version, commit and Package URL it states, and the
    component that name or Package URL matched (docs/coverage.md).

    ``component`` is null when nothing matched: the import report lists the name, and
    nothing is guessed. Written with the run by the importer (claimsdb/importers/), never
    part of a record document; a lab observation, so no rule reads it to grade anything.
    """

    class Role(models.TextChoices):
        FRAMEWORK = "framework", "framework"
        BACKEND = "backend", "backend"

    class MatchedBy(models.TextChoices):
        PURL = "purl", "Package URL"
        NAME = "name", "name or alias"
        NONE = "", "nothing"

    run = models.ForeignKey(ReproductionRun, on_delete=models.CASCADE, related_name="components")
    scenario = models.ForeignKey(
        ReproductionScenario, on_delete=models.CASCADE, related_name="components"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    name = models.TextField()  # as the file writes it: "mooncake", "other:ucx", "sglang"
    version = models.TextField(blank=True, default="")
    commit = models.CharField(max_length=64, blank=True, default="")
    purl = models.TextField(blank=True, default="")
    component = models.ForeignKey(
        Component, on_delete=models.PROTECT, null=True, related_name="run_relations"
    )
    matched_by = models.CharField(
        max_length=8, choices=MatchedBy.choices, blank=True, default=MatchedBy.NONE
    )

    class Meta:
        ordering = ["run", "scenario", "role"]
        constraints = [
            models.UniqueConstraint(fields=["scenario", "role"], name="run_component_unique"),
            models.CheckConstraint(
                condition=models.Q(role__in=["framework", "backend"]),
                name="run_component_role_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(component__isnull=True, matched_by="")
                | models.Q(component__isnull=False, matched_by__in=["purl", "name"]),
                name="run_component_matched_by",
            ),
        ]
        # a component's runs (its page), by the version seen
        indexes = [
            models.Index(fields=["component", "role", "version"], name="run_component_lookup")
        ]

    def __str__(self) -> str:
        return f"{self.scenario_id} {self.role} {self.name} {self.version}".strip()
