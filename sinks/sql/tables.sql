-- Reveal's tables. ReplacingMergeTree on each row's natural key makes at-least-once delivery store once.
-- Retention counts from when a row was stored, so a replay of an old recording is kept like live data.
-- A frame is a 700-value array (~5.6 KB): ClickHouse's default granules (up to 10 MB) and merge blocks (8,192 rows,
-- ~46 MB) made each merge hold hundreds of MB of an embedded worker. With 1 MB granules and 1,024-row merge blocks
-- a merge holds tens of MB (`reveal bench pipeline`, 150 hosts: a worker's peak went from 1.1 GB to 0.85 GB).
-- Frames are written once and merged again and again, so their values take ZSTD(1) (as small as ZSTD(3) on a real
-- host's frames, 0.19 bytes per channel-sample) and the writer raises merge_selector_base to 20 where ClickHouse
-- knows it: each frame is rewritten by fewer, wider merges.
CREATE TABLE IF NOT EXISTS {db}.frames
(
    host            LowCardinality(String),
    cluster         LowCardinality(String),
    ts              DateTime64(9) CODEC(DoubleDelta, ZSTD(3)),
    sequence        UInt64 CODEC(Delta, ZSTD(3)),
    catalog_version UInt32,
    values          Array(Float64) CODEC(ZSTD(1)),
    stored_at       DateTime DEFAULT now()
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(ts)
ORDER BY (host, ts, sequence)
TTL stored_at + INTERVAL 30 DAY
SETTINGS index_granularity_bytes = 1048576, merge_max_block_size = 1024;

CREATE TABLE IF NOT EXISTS {db}.catalogs
(
    host        LowCardinality(String),
    cluster     LowCardinality(String),
    version     UInt32,
    interval_s  Float64,
    names       Array(String),
    subsystems  Array(LowCardinality(String)),
    kinds       Array(LowCardinality(String)),
    units       Array(LowCardinality(String)),
    devices     Array(String),
    seen_at     DateTime64(3) DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(seen_at)
ORDER BY (host, version);

CREATE TABLE IF NOT EXISTS {db}.windows
(
    host            LowCardinality(String),
    cluster         LowCardinality(String),
    window_id       Int64,
    start           DateTime64(9),
    end             DateTime64(9),
    frames          UInt32,
    baseline_ready  UInt8,
    score           Float64,
    threshold       Float64,
    anomalous       UInt8,
    detector_names  Array(LowCardinality(String)),
    detector_scores Array(Float64),
    detector_thresholds Array(Float64),
    flagged_by      Array(LowCardinality(String)),
    regime          LowCardinality(String),
    stored_at       DateTime DEFAULT now()
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(end)
ORDER BY (host, end, window_id)
TTL stored_at + INTERVAL 90 DAY;

CREATE TABLE IF NOT EXISTS {db}.anomalies
(
    host                LowCardinality(String),
    cluster             LowCardinality(String),
    window_id           Int64,
    start               DateTime64(9),
    end                 DateTime64(9),
    detectors           Array(LowCardinality(String)),
    score               Float64,
    threshold           Float64,
    subsystem           LowCardinality(String),
    claim               String,
    explanation         LowCardinality(String),
    hint                String,
    evidence_channel    Array(String),
    evidence_feature    Array(LowCardinality(String)),
    evidence_value      Array(Float64),
    evidence_baseline   Array(Float64),
    evidence_std        Array(Float64),
    evidence_z          Array(Float64)
)
ENGINE = ReplacingMergeTree
ORDER BY (host, end, window_id, detectors);

CREATE TABLE IF NOT EXISTS {db}.alerts
(
    alert_id    String,
    host        LowCardinality(String),
    cluster     LowCardinality(String),
    state       LowCardinality(String),
    start       DateTime64(9),
    end         DateTime64(9),
    severity    Float64,
    subsystem   LowCardinality(String),
    summary     String,
    hint        String,
    kind        LowCardinality(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (host, start, alert_id, state);

CREATE TABLE IF NOT EXISTS {db}.baselines
(
    host        LowCardinality(String),
    catalog_version UInt32,
    saved_at    DateTime64(3),
    windows     UInt32,
    state       String CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree(saved_at)
ORDER BY (host, catalog_version);

CREATE TABLE IF NOT EXISTS {db}.retransmissions
(
    host            LowCardinality(String),
    cluster         LowCardinality(String),
    window_id       Int64,
    start           DateTime64(9),
    end             DateTime64(9),
    category        LowCardinality(String),
    reason          String,
    retransmits     Float64,
    segments_out    Float64,
    rate_z          Float64
)
ENGINE = ReplacingMergeTree
ORDER BY (host, end, window_id);

-- Fault-injection lab: what was injected (ground truth) and how well each run was scored.
CREATE TABLE IF NOT EXISTS {db}.lab_faults
(
    run_id      String,
    scenario    LowCardinality(String),
    fault       LowCardinality(String),
    host        LowCardinality(String),
    start       DateTime64(9),
    end         DateTime64(9),
    subsystem   LowCardinality(String),
    magnitude   Float64,
    description String,
    took_effect Bool DEFAULT true,
    effect      String DEFAULT ''
)
ENGINE = ReplacingMergeTree
ORDER BY (run_id, host, start, fault);

CREATE TABLE IF NOT EXISTS {db}.lab_scores
(
    run_id      String,
    scenario    LowCardinality(String),
    thresholds  LowCardinality(String),
    metric      LowCardinality(String),
    value       Float64,
    scored_at   DateTime64(3) DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(scored_at)
ORDER BY (run_id, thresholds, metric);

-- One channel's values by name, for every host whose catalog has it:
--   SELECT ts, value FROM channel_values(name = 'cpu.user.all') WHERE host = 'gpu-node-1' ORDER BY ts
CREATE VIEW IF NOT EXISTS {db}.channel_values AS
SELECT f.host AS host, f.cluster AS cluster, f.ts AS ts, f.values[indexOf(c.names, {name:String})] AS value,
       c.subsystems[indexOf(c.names, {name:String})] AS subsystem, c.units[indexOf(c.names, {name:String})] AS unit
FROM {db}.frames AS f
INNER JOIN (SELECT host, version, any(names) AS names, any(subsystems) AS subsystems, any(units) AS units
            FROM {db}.catalogs GROUP BY host, version) AS c ON f.host = c.host AND f.catalog_version = c.version
WHERE indexOf(c.names, {name:String}) > 0;
