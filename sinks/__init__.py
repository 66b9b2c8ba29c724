"""Where results land: ClickHouse, embedded (chDB) or a server, through one clickhouse-connect writer."""

__all__ = ["clickhouse", "landing", "read_only", "retrospectives", "rows", "tables"]
