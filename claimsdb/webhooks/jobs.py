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

from django_tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult

from .delivery import enqueue_due, send
from .fanout import fan_out

logger = logging.getLogger("claimsdb.webhooks")


@task()
def send_webhook_delivery(delivery_id: int, token: str) -> str:
    """Send one delivery, if the lease it was queued with still holds."""
    return send(delivery_id, token)


# At most this many delivery jobs wait in the queue: the pump hands out no more while the
# workers have that many still to run (a receiver that times out slows them down), so the
# queue does not fill with jobs whose leases run out before they start.
QUEUED_AT_MOST = 200


def waiting_jobs() -> int:
    """The delivery jobs queued and not started yet (read along the queue's index)."""
    return DBTaskResult.objects.filter(
        status=TaskResultStatus.READY, task_path=send_webhook_delivery.module_path
    ).count()


def pump() -> tuple[int, int]:
    """One round of the pump: deliveries made, and deliveries queued to be sent."""
    made = fan_out()
    room = QUEUED_AT_MOST - waiting_jobs()
    queued = enqueue_due(limit=room) if room > 0 else []
    if made or queued:
        logger.info("webhooks: %s deliveries made, %s queued", made, len(queued))
    return made, len(queued)
