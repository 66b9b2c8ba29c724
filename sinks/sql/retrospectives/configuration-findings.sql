-- Hosts configured unlike their peers (HugePages, NUMA, IRQ affinity, MTU, queue counts and other constant
-- channels), each told once: the host, the channels that differ, its value against its peers', and what to do.
-- param cluster String = : only this cluster (empty: every cluster)
SELECT host, cluster, min(end) AS found_at, claim, hint,
       any(evidence_channel) AS channels,
       any(evidence_value) AS host_values,
       any(evidence_baseline) AS peer_values
FROM anomalies FINAL
WHERE has(detectors, 'configuration') AND ({cluster:String} = '' OR cluster = {cluster:String})
GROUP BY host, cluster, claim, hint
ORDER BY found_at, host
