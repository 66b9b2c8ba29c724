"""Re-reading kernel files without re-parsing them: files kept open, token layouts and the compiled scanner."""

__all__ = ["persistent_file", "scanned_layout", "token_layout"]
