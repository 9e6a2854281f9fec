"""REST API for the reproduction-results importer."""

urlpatterns: list = []
