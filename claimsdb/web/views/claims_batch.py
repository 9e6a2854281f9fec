"""Adding several claims to a case on one page, saved as one revision."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from claimsdb import choices
from claimsdb.selectors.cases import suggested_claim_ids
from claimsdb.services import WriteOutcome, claims_add

from ..editing import RecordEditView, ViolationPlacer, list_rows, row_data
from ..forms import ClaimForm, EvidenceLinkFormSet
from ..pickers import Picker
from .case_edit import case_url

COUNT = "batch-count"  # how many claim blocks the page shows (a hidden field)
ADD_CLAIM = "add_claim"  # the "Add another claim" button
BATCH_DEFAULT = 5
BATCH_MAX = 50
CLAIM_FIELDS = ("id", "statement", "status", "status_note", "basis", "origin")


def blocks_asked(data, query) -> int:
    """The number of claim blocks: as the page last had them, else ``?claims=n``, else the
    default; never more than ``BATCH_MAX``."""
    for value in ((data or {}).get(COUNT, ""), query.get("claims", "")):
        if value.isdigit() and int(value) > 0:
            return min(int(value), BATCH_MAX)
    return BATCH_DEFAULT


class ClaimsBatchView(RecordEditView):
    """/cases/<key>/claims/add/: several claims, each with its evidence links, added at the
    end of the case as one revision (``claims_add``). A block left as it was shown adds
    nothing; a refusal is shown at the field of the claim or link it is about."""

    template_name = "cases/claims_batch.html"
    page_title = "Add claims"
    default_summary = "Add claims"

    def count(self, data) -> int:
        return blocks_asked(data, self.request.GET)

    def build_forms(self, data, document):
        count = self.count(data)
        ids = suggested_claim_ids(document["key"], count)
        sources = Picker.of("source")
        section: dict[str, Any] = {}
        for i in range(count):
            evidence = EvidenceLinkFormSet(
                data,
                initial=[],
                prefix=f"c{i}-evidence",
                form_kwargs={"source_picker": sources},
            )
            linked = data is not None and any(row.has_changed() for row in evidence.forms)
            section[f"claim-{i}"] = ClaimForm(
                data,
                initial={
                    "id": ids[i],
                    "status": choices.ClaimStatus.SUPPORTED,
                    "basis": choices.ClaimBasis.REPORTED_FINDING,
                    "origin": choices.ClaimOrigin.HUMAN,
                },
                prefix=f"c{i}",
                # a block left as shown adds no claim, unless links were typed into it
                empty_permitted=not linked,
                use_required_attribute=False,
            )
            section[f"evidence-{i}"] = evidence
        return section

    def post(self, request, *args, **kwargs):
        if ADD_CLAIM in request.POST:
            data = request.POST.copy()
            data[COUNT] = str(min(self.count(request.POST) + 1, BATCH_MAX))
            return self.render_input(data)
        return super().post(request, *args, **kwargs)

    def write(self, section, placer: ViolationPlacer, save) -> WriteOutcome:
        start = len(self.document["claims"])
        claims = []
        for i in range(self.count(self.request.POST)):
            form, evidence = section[f"claim-{i}"], section[f"evidence-{i}"]
            if not form.cleaned_data:
                continue  # left blank
            index = start + len(claims)
            claim = {name: form.cleaned_data[name] for name in CLAIM_FIELDS}
            claim["id"] = claim["id"].strip()
            claim["evidence"] = []
            placer.add(f"claims[{index}]", form)
            placer.section(f"claims[{index}].evidence", f"evidence-{i}")
            for position, row in enumerate(list_rows(evidence)):
                claim["evidence"].append(row_data(row))
                placer.add(f"claims[{index}].evidence[{position}]", row)
            claims.append(claim)
        return claims_add(case_key=self.record_key(), claims=claims, **self.service_arguments(save))

    def render_page(self, section, save, **kwargs):
        errors = kwargs.get("section_errors") or {}
        self.blocks = [
            {
                "number": i + 1,
                "claim": section[f"claim-{i}"],
                "evidence": section[f"evidence-{i}"],
                "errors": errors.get(f"evidence-{i}", []),
            }
            for i in range(len(section) // 2)
        ]
        return super().render_page(section, save, **kwargs)

    def extra_context(self):
        return {"blocks": self.blocks, "count": len(self.blocks), "batch_max": BATCH_MAX}

    def success_url(self, document):
        return case_url(document["key"], "claims")

    def cancel_url(self):
        return reverse("case-claims", args=[self.record_key()])
