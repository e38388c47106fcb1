-- The sinks' insert (migrations 016, 019) now keeps the earliest recorded event of an identity,
-- as ClickHouse does (ReplacingMergeTree's version falls as recorded_at rises), whatever order
-- the two arrive in: the usage log no longer keeps an item's events on one partition
-- (docs/decisions.md, "One Kafka message per ingest flush"). Two events of one identity happen
-- only when a produce call's acknowledgement was lost and the client retried (a new id).
--
-- The common case is unchanged: insert the new identities, add them to the daily totals and mark
-- the billed periods they fall in, in one statement. Only when some events were not inserted
-- (a redelivery, or another event of a stored identity) does a second statement look for a stored
-- event recorded later than an incoming one; that event is replaced by the incoming one (its id,
-- quantity and times), the daily totals move from the one to the other and the billed periods of
-- both are marked. A voided event is never replaced: its void stands, as in ClickHouse, where the
-- voided row's version is above every event's. Equal recorded_at: the stored one stays.
-- Returns the ids stored by this call (inserted, or replacing another), as before.
CREATE OR REPLACE FUNCTION usage_record_events(
  ids uuid[], orgs bigint[], items bigint[], keys text[], quantities numeric[],
  occurred timestamptz[], recorded timestamptz[]
) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
DECLARE
  inserted_ids uuid[];
  replacing_ids uuid[] := '{}';
  r record;
BEGIN
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
  ), late AS (
    SELECT b.org_id, b.subscription_item_id, b.period_start
      FROM usage_billed_periods b
      JOIN (SELECT org_id, subscription_item_id, min(occurred_at) AS first, max(occurred_at) AS last
              FROM inserted GROUP BY 1, 2) i
        ON b.org_id = i.org_id AND b.subscription_item_id = i.subscription_item_id
       AND b.period_start <= i.last AND b.period_end > i.first
     ORDER BY 1, 2, 3
       FOR UPDATE OF b
  ), marked AS (
    UPDATE usage_billed_periods b SET dirty = true
      FROM late l
     WHERE b.org_id = l.org_id AND b.subscription_item_id = l.subscription_item_id AND b.period_start = l.period_start
  )
  SELECT coalesce(array_agg(i.id), '{}') INTO inserted_ids FROM inserted i;

  IF cardinality(inserted_ids) = cardinality(ids) THEN
    RETURN QUERY SELECT unnest(inserted_ids);
    RETURN;
  END IF;

  -- Per identity, the earliest recorded incoming event (ties: the smaller id), against the stored
  -- one, locked; FOR UPDATE re-checks the condition on a row another writer just changed.
  FOR r IN
    SELECT e.id AS old_id, e.org_id, e.subscription_item_id, e.quantity AS old_quantity,
           e.occurred_at AS old_occurred, n.id, n.quantity, n.occurred_at, n.recorded_at
      FROM (SELECT DISTINCT ON (u.org_id, u.subscription_item_id, u.idempotency_key) u.*
              FROM unnest(ids, orgs, items, keys, quantities, occurred, recorded)
                AS u (id, org_id, subscription_item_id, idempotency_key, quantity, occurred_at, recorded_at)
             ORDER BY u.org_id, u.subscription_item_id, u.idempotency_key, u.recorded_at, u.id) n
      JOIN usage_events e
        ON e.org_id = n.org_id AND e.subscription_item_id = n.subscription_item_id
       AND e.idempotency_key = n.idempotency_key
     WHERE e.id <> n.id AND e.recorded_at > n.recorded_at AND e.voided_at IS NULL
     ORDER BY e.org_id, e.subscription_item_id, e.idempotency_key
       FOR UPDATE OF e
  LOOP
    UPDATE usage_events
       SET id = r.id, quantity = r.quantity, occurred_at = r.occurred_at, recorded_at = r.recorded_at
     WHERE id = r.old_id;
    -- the two days in key order, the one lock order of every writer of the totals
    IF (r.old_occurred AT TIME ZONE 'UTC')::date <= (r.occurred_at AT TIME ZONE 'UTC')::date THEN
      UPDATE usage_daily_totals SET quantity = quantity - r.old_quantity
       WHERE org_id = r.org_id AND subscription_item_id = r.subscription_item_id
         AND day = (r.old_occurred AT TIME ZONE 'UTC')::date;
      INSERT INTO usage_daily_totals AS t (org_id, subscription_item_id, day, quantity)
      VALUES (r.org_id, r.subscription_item_id, (r.occurred_at AT TIME ZONE 'UTC')::date, r.quantity)
      ON CONFLICT (org_id, subscription_item_id, day) DO UPDATE SET quantity = t.quantity + excluded.quantity;
    ELSE
      INSERT INTO usage_daily_totals AS t (org_id, subscription_item_id, day, quantity)
      VALUES (r.org_id, r.subscription_item_id, (r.occurred_at AT TIME ZONE 'UTC')::date, r.quantity)
      ON CONFLICT (org_id, subscription_item_id, day) DO UPDATE SET quantity = t.quantity + excluded.quantity;
      UPDATE usage_daily_totals SET quantity = quantity - r.old_quantity
       WHERE org_id = r.org_id AND subscription_item_id = r.subscription_item_id
         AND day = (r.old_occurred AT TIME ZONE 'UTC')::date;
    END IF;
    UPDATE usage_billed_periods b SET dirty = true
     WHERE b.org_id = r.org_id AND b.subscription_item_id = r.subscription_item_id
       AND ((b.period_start <= r.old_occurred AND b.period_end > r.old_occurred)
         OR (b.period_start <= r.occurred_at AND b.period_end > r.occurred_at));
    replacing_ids := replacing_ids || r.id;
  END LOOP;

  IF cardinality(replacing_ids) = 0 THEN
    RETURN QUERY SELECT unnest(inserted_ids);
  ELSE
    -- an event inserted above may have been replaced by an earlier one of the same batch
    RETURN QUERY SELECT e.id FROM usage_events e WHERE e.id = ANY (inserted_ids || replacing_ids);
  END IF;
END
$$;
