"""Pages (docs/web-ui.md). Each view reads through selectors or calls one service."""
