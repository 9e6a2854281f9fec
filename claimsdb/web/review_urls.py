"""The review queue's pages and feed (docs/review.md)."""

from django.urls import path

from . import review

urlpatterns = [
    path("review/", review.review_queue_page, name="review-queue"),
    path("review/feed.atom", review.ReviewFeed(), name="review-feed"),
    path(
        "review/feed/<int:user_id>/<str:token>/",
        review.ReviewFeed(),
        name="review-feed-token",
    ),
    path(
        "review/comments/<int:comment_id>/resolve/",
        review.comment_resolve_view,
        name="review-comment-resolve",
    ),
    # keys of methods hold a slash: the actions come before the record's page
    path(
        "review/<str:kind>/<path:key>/approve/",
        review.approve_view,
        name="review-approve",
    ),
    path(
        "review/<str:kind>/<path:key>/request-changes/",
        review.request_changes_view,
        name="review-request-changes",
    ),
    path("review/<str:kind>/<path:key>/", review.record_review_page, name="review-record"),
]
