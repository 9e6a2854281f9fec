"""Upload page for reproduction results."""

urlpatterns: list = []
