"""Where results land: ClickHouse, embedded (chDB) or a server, through one clickhouse-connect writer."""
