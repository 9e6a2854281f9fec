"""Role permissions for API views (docs/architecture.md, "Roles").

A view lists one of these in ``permission_classes``. Anonymous users are refused with 401
(DRF turns a refusal into ``not_authenticated`` when no credentials were sent), signed-in
users without the role with 403 ``permission.denied``. The services check the role again
inside the writing transaction; these classes only refuse early and cheaply.

Records, claims and revisions are read by anyone: what each user sees — the working state
or the released record — is decided by the access policy (``claimsdb.access``), not here.

* ``PublicReads`` — read-only endpoints of the record (anyone; other methods: viewers get
  405, others 401/403).
* ``RecordPermission`` — anyone reads; the write role follows the view's record ``kind``.
* ``ClaimPermission`` — anyone reads; analysts write (claims).
* ``ViewerReads`` — read-only endpoints of the working state only (viewer and above).
* ``AnalystWrites`` — viewers read, analysts write (imports).
* ``ReviewerWrites`` — viewers read, reviewers write.
* ``ReviewerOnly`` — reviewers only, for reading and writing (reverts).
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from claimsdb.access import holds_role, may_read_working_state
from claimsdb.codes import PermissionCode
from claimsdb.records.kinds import record_kinds

ANYONE = "anyone"  # a read role: no credentials needed; visibility decides what is seen


class RolePermission(BasePermission):
    """Reads need ``read_role``, everything else ``write_role``."""

    read_role = "viewer"
    write_role = "reviewer"
    code = PermissionCode.DENIED
    message = "this needs a role you do not hold"

    def required_role(self, request, view) -> str:
        return self.read_role if request.method in SAFE_METHODS else self.write_role

    def has_permission(self, request, view) -> bool:
        role = self.required_role(request, view)
        if role == ANYONE:
            return True
        if role == "viewer":
            allowed = may_read_working_state(request.user)
        else:
            allowed = holds_role(request.user, role)
        if not allowed:
            what = "reading" if request.method in SAFE_METHODS else "this change"
            self.message = f"{what} needs the {role} role"
        return allowed


class PublicReads(RolePermission):
    """Read-only endpoints anyone reads (a write method there is a 405 for viewers)."""

    read_role = ANYONE
    write_role = "viewer"


class ViewerReads(RolePermission):
    """Read-only endpoints: viewers and above (a write method there is a 405, not a 403)."""

    write_role = "viewer"


class AnalystWrites(RolePermission):
    write_role = "analyst"


class ClaimPermission(AnalystWrites):
    """Anyone reads claims (of the released record, or of the working state); analysts
    write them."""

    read_role = ANYONE


class ReviewerWrites(RolePermission):
    write_role = "reviewer"


class ReviewerOnly(RolePermission):
    read_role = "reviewer"
    write_role = "reviewer"


class RecordPermission(RolePermission):
    """Anyone reads; writes need the role the services require for the view's ``kind``."""

    read_role = ANYONE

    def required_role(self, request, view) -> str:
        if request.method in SAFE_METHODS:
            return self.read_role
        return record_kinds.get(view.kind).write_role


class ReviewQueuePermission(RolePermission):
    """The review queue: analysts read it (their own waiting changes), reviewers read all of
    it and answer (``access.review_queue``)."""

    read_role = "analyst"
    write_role = "reviewer"
