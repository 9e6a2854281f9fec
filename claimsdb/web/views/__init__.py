"""Pages (README, "The web UI"). Each view reads through selectors or calls one service."""
