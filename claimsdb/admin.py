"""The admin shows the domain read-only: every change goes through the services."""

from django.contrib import admin

from claimsdb import models


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


for model in (
    models.Case,
    models.Claim,
    models.EvidenceLink,
    models.Source,
    models.AssessmentMethod,
    models.Assessment,
    models.Control,
    models.Unknown,
    models.Figure,
    models.Attribution,
    models.Relation,
    models.ScopeRule,
    models.ReproductionRun,
    models.ReproductionScenario,
    models.Revision,
    models.ImportReport,
    models.Release,
    models.ReleaseEntry,
):
    admin.site.register(model, ReadOnlyAdmin)
