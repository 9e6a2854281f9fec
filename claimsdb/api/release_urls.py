"""REST API for releases."""

urlpatterns: list = []
