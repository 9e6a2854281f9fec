"""``manage.py db_worker``: django-tasks' database worker, made to survive its database.

The worker of ``django_tasks_db`` exits on the first error of its database connection — a
PostgreSQL restart, a failover, a network cut — and background imports then stop
silently. This one (``claimsdb.importers.worker``) waits and connects again, with a
doubling back-off, for as long as it takes; and now and then queues again the imports
whose job died (``requeue_dead_imports``). Its options are django-tasks' own.
"""

from __future__ import annotations

import os

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands import db_worker

from claimsdb.importers.worker import RecoveringWorker


class Command(db_worker.Command):
    help = (
        "Run the background-job worker (large imports). It survives its database: after a "
        "lost connection it connects again with back-off, and it queues again the imports "
        "whose job stopped beating."
    )

    def handle(
        self,
        *,
        verbosity,
        queue_name,
        interval,
        batch,
        backend_name,
        startup_delay,
        reload,
        max_tasks,
        worker_id,
        exclude_queues,
        **options,
    ):
        self.configure_logging(verbosity)
        if reload and batch:
            reload = False
        queue_names = queue_name.split(",")
        excluded = exclude_queues.split(",") if exclude_queues else []
        if excluded and "*" not in queue_names:
            raise db_worker.CommandError("--exclude-queues can only be used with --queue-name=*")
        worker = RecoveringWorker(
            queue_names=queue_names,
            interval=interval,
            batch=batch,
            backend_name=backend_name,
            startup_delay=startup_delay,
            max_tasks=max_tasks,
            worker_id=worker_id,
            excluded_queue_names=excluded,
        )
        if reload:
            if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
                worker.configure_signals()
            run_with_reloader(worker.run)
        else:
            worker.configure_signals()
            worker.run()
