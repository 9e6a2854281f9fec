"""Reads of the working state for the pages, the API and the commands, with flat query
counts, in one module per thing they read: ``cases``, ``revisions``, ``scope``,
``sources``, ``methods``, ``releases``; ``pages`` holds the helpers that cut a list into
pages. Callers import from the module that reads what they need. What the public sees is
read by ``claimsdb.public``."""
