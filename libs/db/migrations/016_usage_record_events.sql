-- The usage sinks' insert as one function: the events not already stored under their identity
-- (org, item, idempotency key), and, in the same statement, the daily totals of what it inserted,
-- so a redelivered event adds nothing (usage_daily_totals, migration 009). Totals are upserted in
-- key order, the one lock order of every writer. Returns the ids inserted.
-- A function rather than the statement's text in each call: PL/pgSQL keeps its plan for the
-- session, where the embedded database (PGlite: one session for every connection, so no named
-- statements) parsed and planned the whole statement again for every write of `npm start`.
CREATE FUNCTION usage_record_events(
  ids uuid[], orgs bigint[], items bigint[], keys text[], quantities numeric[],
  occurred timestamptz[], recorded timestamptz[]
) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH inserted AS (
    INSERT INTO usage_events AS e (id, org_id, subscription_item_id, idempotency_key, quantity, occurred_at, recorded_at)
    SELECT * FROM unnest(ids, orgs, items, keys, quantities, occurred, recorded)
    ON CONFLICT (org_id, subscription_item_id, idempotency_key) DO NOTHING
    RETURNING e.id, e.org_id, e.subscription_item_id, e.quantity, e.occurred_at
  ), totals AS (
    INSERT INTO usage_daily_totals AS t (org_id, subscription_item_id, day, quantity)
    SELECT i.org_id, i.subscription_item_id, (i.occurred_at AT TIME ZONE 'UTC')::date, sum(i.quantity)
      FROM inserted i GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (org_id, subscription_item_id, day)
      DO UPDATE SET quantity = t.quantity + excluded.quantity
  )
  SELECT i.id FROM inserted i;
END
$$;
