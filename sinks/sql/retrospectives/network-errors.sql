-- Link and protocol trouble by host and device in a time range: how much each network error, drop and
-- retransmission counter grew (device is empty for host-wide protocol counters).
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
-- param cluster String = : only this cluster (empty: every cluster)
WITH troubles AS (
    SELECT host, version, names, devices,
           arrayFilter(i -> subsystems[i] = 'network' AND kinds[i] IN ('counter', 'event')
                            AND match(lower(names[i]), 'drop|err|fifo|discard|retrans|lost|timeout'),
                       arrayEnumerate(names)) AS indices
    FROM catalogs FINAL
)
SELECT frames.host AS host, troubles.devices[channel_index] AS device, troubles.names[channel_index] AS channel,
       max(frames.values[channel_index]) - min(frames.values[channel_index]) AS increase
FROM frames
INNER JOIN troubles ON frames.host = troubles.host AND frames.catalog_version = troubles.version
ARRAY JOIN troubles.indices AS channel_index
WHERE frames.ts >= {since:DateTime64(3)} AND frames.ts < {until:DateTime64(3)}
  AND ({cluster:String} = '' OR frames.cluster = {cluster:String})
  AND isFinite(frames.values[channel_index])
GROUP BY host, device, channel
HAVING increase > 0
ORDER BY increase DESC, host, channel
