-- Usage read-back and void (docs/architecture.md, "The usage read-back").

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

-- Per UTC day and item, the quantity of the events not voided: what GET /subscriptions/{id}/usage
-- and /usage/daily read in the Postgres mode, so a period costs a few rows whatever the number of
-- events. Kept exact by the statements that change usage_events: an insert adds only the events
-- it inserted (ON CONFLICT DO NOTHING ... RETURNING), a void subtracts only the event it voided
-- (WHERE voided_at IS NULL ... RETURNING), each in the same statement as the change.
CREATE TABLE usage_daily_totals (
  org_id               bigint NOT NULL,
  subscription_item_id bigint NOT NULL,
  day                  date NOT NULL,
  quantity             numeric(38, 8) NOT NULL,
  PRIMARY KEY (org_id, subscription_item_id, day)
);
INSERT INTO usage_daily_totals (org_id, subscription_item_id, day, quantity)
SELECT org_id, subscription_item_id, (occurred_at AT TIME ZONE 'UTC')::date, sum(quantity)
  FROM usage_events
 GROUP BY 1, 2, 3;
