"""Signed webhooks (docs/integrations.md): subscriptions, the events they ask for, the
fan-out of the ledger and of other events into deliveries, and their sending by the
background-job worker, signed following the Standard Webhooks specification."""
