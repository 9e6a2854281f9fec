"""Release pages, feed and citation downloads."""

urlpatterns: list = []
