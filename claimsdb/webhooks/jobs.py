"""Webhooks on the background-job queue (``manage.py db_worker``, docs/operations.md).

The worker runs a pump (``pump``, every ``WEBHOOKS_POLL_SECONDS`` in a thread of its own,
``claimsdb.importers.worker``): it fans out new revisions and events into deliveries
(``fanout.fan_out``), then leases the due deliveries and queues a ``send_webhook_delivery``
job for each (``delivery.enqueue_due``), which the worker's loop runs like any other job.
Everything the pump and the jobs know is in the database: a worker that dies and starts
again, or another worker beside it, carries on where it was.
"""

from __future__ import annotations

import logging

from django_tasks import task

from .delivery import enqueue_due, send
from .fanout import fan_out

logger = logging.getLogger("claimsdb.webhooks")


@task()
def send_webhook_delivery(delivery_id: int, token: str) -> str:
    """Send one delivery, if the lease it was queued with still holds."""
    return send(delivery_id, token)


def pump() -> tuple[int, int]:
    """One round of the pump: deliveries made, and deliveries queued to be sent."""
    made = fan_out()
    queued = enqueue_due()
    if made or queued:
        logger.info("webhooks: %s deliveries made, %s queued", made, len(queued))
    return made, len(queued)
