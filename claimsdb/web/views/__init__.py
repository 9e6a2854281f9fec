"""Pages (DESIGN.md §7). Each view reads through selectors or calls one service."""
