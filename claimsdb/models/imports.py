from django.conf import settings
from django.db import models


class ReproductionRun(models.Model):
    """One imported ``repro-results/1`` run: lab evidence attached to a case, read-only.

    ``summary`` is the whole results file but its trial rows, plus ``sha256`` of the file;
    it is what the case document lists under ``reproduction_runs``.
    """

    case = models.ForeignKey(
        "claimsdb.Case", on_delete=models.PROTECT, related_name="reproduction_runs"
    )
    run_id = models.CharField(max_length=120, unique=True)
    file_sha256 = models.CharField(max_length=64)
    summary = models.JSONField()
    started_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["case", "started_at", "run_id"]

    def __str__(self) -> str:
        return self.run_id


class ReproductionScenario(models.Model):
    """One scenario of a run, with its counters (copied out of the summary for queries)."""

    run = models.ForeignKey(ReproductionRun, on_delete=models.CASCADE, related_name="scenarios")
    position = models.PositiveIntegerField()
    scenario_id = models.CharField(max_length=64)
    backend = models.CharField(max_length=100)
    mitigations = models.JSONField(default=list)
    free_list_order = models.CharField(max_length=8)
    trials = models.PositiveBigIntegerField()
    checksum_mismatches = models.PositiveBigIntegerField()
    wrong_outputs = models.PositiveBigIntegerField()
    outcome = models.CharField(max_length=16)
    # The backend's build as the file states it (repro-results/1.1; "" when it does not).
    backend_version = models.CharField(max_length=200, blank=True, default="")
    backend_commit = models.CharField(max_length=64, blank=True, default="")
    backend_purl = models.CharField(max_length=500, blank=True, default="")
    # How many trial rows are stored for it: 0 (a file without rows) or exactly ``trials``.
    stored_rows = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "scenario_id"], name="scenario_id_unique"),
            models.CheckConstraint(
                condition=models.Q(checksum_mismatches__lte=models.F("trials")),
                name="scenario_mismatches_le_trials",
            ),
            models.CheckConstraint(
                condition=models.Q(wrong_outputs__lte=models.F("trials")),
                name="scenario_wrong_outputs_le_trials",
            ),
            models.CheckConstraint(
                condition=models.Q(stored_rows=0) | models.Q(stored_rows=models.F("trials")),
                name="scenario_stored_rows_all_or_none",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run.run_id}/{self.scenario_id}"


class TrialRow(models.Model):
    """One trial of a scenario. Stored beside the document, never in it."""

    scenario = models.ForeignKey(
        ReproductionScenario, on_delete=models.CASCADE, related_name="trial_rows"
    )
    n = models.PositiveIntegerField()
    aborted = models.BooleanField()
    mid_transfer = models.BooleanField()
    reused_in_flight = models.BooleanField()
    late_write = models.BooleanField()
    checksum_mismatch = models.BooleanField()
    wrong_output = models.BooleanField()
    latency_us = models.FloatField(null=True)
    extra = models.JSONField(null=True)

    class Meta:
        ordering = ["scenario", "n"]
        constraints = [models.UniqueConstraint(fields=["scenario", "n"], name="trial_n_unique")]


class ImportReport(models.Model):
    """What one import attempt did (or would have done, on a dry run), kept for the record."""

    created_at = models.DateTimeField(auto_now_add=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    filename = models.CharField(max_length=500)
    file_sha256 = models.CharField(max_length=64, blank=True)
    run_id = models.CharField(max_length=120, blank=True)
    case_key = models.CharField(max_length=40, blank=True)
    outcome = models.CharField(max_length=16)
    dry_run = models.BooleanField(default=False)
    revision_number = models.PositiveBigIntegerField(null=True)
    report = models.JSONField()
    # A background import (claimsdb/importers/jobs.py): the stored upload it reads, the
    # options it runs with, and how far it has got while ``outcome`` is queued/running.
    stored_file = models.CharField(max_length=500, blank=True)
    options = models.JSONField(default=dict, blank=True)
    progress = models.JSONField(default=dict, blank=True)
    # While ``running``: when its job last showed it was alive (a thread of the job beats
    # every IMPORT_HEARTBEAT_SECONDS, whatever the import is doing). A job whose beat is
    # older than IMPORT_DEAD_SECONDS is dead and may be queued again; ``attempts`` counts
    # the jobs that claimed it.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import {self.pk}: {self.filename} {self.outcome}"
