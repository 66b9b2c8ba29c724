"""`reveal report`: one self-contained HTML page with the paper's figures drawn from Reveal's ClickHouse tables."""

__all__ = ["contents", "data", "page", "series", "svg"]
