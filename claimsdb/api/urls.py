"""REST API under /api/v1/ (DESIGN.md §7)."""

urlpatterns: list = []
