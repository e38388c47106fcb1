-- Usage read-back and void (DESIGN §9.1).

-- A voided event stays (the event list shows it with its voided_at) and counts nowhere. The void
-- reaches this column twice, both writes idempotent: from the api, in the transaction that checks
-- the period is not invoiced, and from the pg-sink applying the void message of the usage log.
ALTER TABLE usage_events ADD COLUMN voided_at timestamptz;

-- GET /usage/events: an organization's events newest first (timestamp, then id: a stable order).
CREATE INDEX usage_events_org_occurred ON usage_events (org_id, occurred_at DESC, id DESC);

-- The sinks' committed watermark (`as_of` of GET /subscriptions/{id}/usage): per sink and log
-- partition, the highest offset the sink's consumer group had committed when it was found at the
-- log's end, and the instant that end was read. Every event acknowledged by the log before that
-- instant is in the sink's store.
CREATE TABLE usage_sink_watermarks (
  sink             text NOT NULL,
  topic            text NOT NULL,
  log_partition    integer NOT NULL,
  committed_offset bigint NOT NULL,
  covered_until    timestamptz NOT NULL,
  PRIMARY KEY (sink, topic, log_partition)
);
