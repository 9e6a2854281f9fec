"""The OpenAPI description of the API's operations, one module per family of endpoints.

Each module holds what only the schema needs — serializers that document a body the views
build themselves, examples, and each operation's summary, parameters and responses — and
gives every view class one decorator (``@schema.IMPORT_LIST``), so that the view modules
read as views. The pieces they share (document components, error responses, common
parameters) are in ``api/openapi.py``.
"""
