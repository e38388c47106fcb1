-- Late usage and grace periods (docs/decisions.md "Late usage" and "Grace drafts").

-- How long a period's invoice stays a DRAFT after the period ends, re-rated by late events and
-- voids, before the scheduler posts it. 0: posted by the run that creates it.
ALTER TABLE organizations ADD COLUMN invoice_grace_hours integer NOT NULL DEFAULT 0
  CHECK (invoice_grace_hours BETWEEN 0 AND 720);

-- A run's invoice keeps the instants of its period (invoices.period_start/end are days) and whether
-- it is the subscription's first paid period: what re-rating a draft and billing again a period
-- whose draft was withdrawn compose it from. post_at: when a grace draft is posted.
ALTER TABLE invoices
  ADD COLUMN billed_from timestamptz,
  ADD COLUMN billed_until timestamptz,
  ADD COLUMN first_period boolean,
  ADD COLUMN post_at timestamptz;
CREATE INDEX invoices_grace_due ON invoices (post_at) WHERE status = 'DRAFT' AND post_at IS NOT NULL;

-- A period is invoiced once, unless its only invoice was withdrawn before it was ever posted: then
-- the next run bills it again.
ALTER TABLE invoices DROP CONSTRAINT invoices_subscription_id_period_start_key;
CREATE UNIQUE INDEX invoices_period_once ON invoices (subscription_id, period_start)
  WHERE status <> 'WITHDRAWN' OR posted_at IS NOT NULL;

-- Periods to invoice again (their draft was withdrawn): the next run claims the subscription.
CREATE TABLE subscription_rebill_periods (
  org_id          bigint NOT NULL,
  subscription_id bigint NOT NULL,
  period_start    timestamptz NOT NULL,
  period_end      timestamptz NOT NULL,
  first_period    boolean NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, subscription_id, period_start),
  FOREIGN KEY (org_id, subscription_id) REFERENCES subscriptions (org_id, id)
);

-- What each metered item was billed for each invoiced period: the quantity on the period's
-- invoice, and the late quantity billed since on later invoices' late-usage lines. `dirty`: the
-- counted quantity may differ from what was billed (set when the row is made, by every insert of
-- an event into the period, and by voids), so the next run, re-rate or preview compares them. The
-- terms the period was billed at price its late usage.
CREATE TABLE usage_billed_periods (
  org_id               bigint NOT NULL,
  subscription_id      bigint NOT NULL,
  subscription_item_id bigint NOT NULL,
  period_start         timestamptz NOT NULL,
  period_end           timestamptz NOT NULL,
  window_start         timestamptz NOT NULL,
  window_end           timestamptz NOT NULL,
  invoice_id           uuid NOT NULL,
  period_quantity      numeric(38, 8) NOT NULL,
  late_quantity        numeric(38, 8) NOT NULL DEFAULT 0,
  included_units       numeric(38, 8) NOT NULL,
  unit_price           numeric(20, 8) NOT NULL,
  dirty                boolean NOT NULL DEFAULT true,
  PRIMARY KEY (org_id, subscription_item_id, period_start)
);
CREATE INDEX usage_billed_periods_dirty ON usage_billed_periods (org_id, subscription_id) WHERE dirty;
CREATE INDEX usage_billed_periods_invoice ON usage_billed_periods (invoice_id);

-- The late-usage lines: which invoice billed how much of which item's period late, and the line
-- as composed (a re-rated draft carries it as it was).
CREATE TABLE usage_late_billings (
  org_id               bigint NOT NULL,
  invoice_id           uuid NOT NULL,
  subscription_item_id bigint NOT NULL,
  period_start         timestamptz NOT NULL,
  period_end           timestamptz NOT NULL,
  quantity             numeric(38, 8) NOT NULL,
  product_id           bigint NOT NULL,
  description          text NOT NULL,
  line_quantity        numeric(20, 4) NOT NULL,
  unit_price           numeric(20, 8) NOT NULL,
  amount               numeric(20, 8) NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (invoice_id, subscription_item_id, period_start)
);

-- The sinks' insert (migration 016) now also marks the billed periods its events fall in, in the
-- same statement: a late event is never missed by the next run. Rows are locked in key order (the
-- one order of every writer; a run holds the rows it compares while it reads the counts).
CREATE OR REPLACE FUNCTION usage_record_events(
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
  SELECT i.id FROM inserted i;
END
$$;
