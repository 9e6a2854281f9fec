"""A release in the formats other tools read: STIX 2.1 (``stix``) and CSV tables
(``tables``), both driven by the registry of record kinds (docs/exports.md)."""
