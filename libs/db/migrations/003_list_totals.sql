-- Exact list totals without counting: `pagination.total` of the public lists (invoices,
-- subscriptions, customers) is read from list_totals, one row per organization, list, customer
-- (0 = every customer) and status ('' = every status). A count(*) of 100,000 invoices scans
-- 100,000 index entries on every page; this is one primary-key read.
--
-- Writers need not know: statement-level triggers record each statement's net change per key in
-- list_total_changes (rows of their own transaction, so writers never wait on each other), and
-- at commit one deferred trigger per transaction folds them into list_totals in key order, so
-- the shared rows are locked only for the instant before commit and always in the same order
-- (no deadlock). A rolled-back transaction, or savepoint, takes its changes with it.

CREATE TABLE list_totals (
  org_id      bigint NOT NULL,
  list        text   NOT NULL CHECK (list IN ('invoices', 'subscriptions', 'customers')),
  customer_id bigint NOT NULL,
  status      text   NOT NULL,
  total       bigint NOT NULL,
  PRIMARY KEY (org_id, list, customer_id, status)
);

CREATE TABLE list_total_changes (
  txid        bigint NOT NULL DEFAULT txid_current(),
  org_id      bigint NOT NULL,
  list        text   NOT NULL,
  customer_id bigint NOT NULL,
  status      text   NOT NULL,
  delta       bigint NOT NULL
);
CREATE INDEX list_total_changes_txid ON list_total_changes (txid);

-- one row per transaction with changes: its deferred trigger does the fold once
CREATE TABLE list_total_pending (txid bigint PRIMARY KEY DEFAULT txid_current());

-- (customer_id, status) of a row counts under four keys: every row, its customer, its status, both
-- (one key for a list without customer or status: 0 and '').
CREATE FUNCTION list_total_keys(row_customer_id bigint, row_status text)
RETURNS TABLE (customer_id bigint, status text) LANGUAGE sql IMMUTABLE AS $$
  SELECT DISTINCT * FROM (VALUES (0::bigint, ''::text), (row_customer_id, ''), (0, row_status),
    (row_customer_id, row_status)) keys (customer_id, status)
$$;

CREATE FUNCTION list_totals_record(list_name text, org_ids bigint[], customer_ids bigint[], statuses text[],
  deltas bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO list_total_changes (org_id, list, customer_id, status, delta)
  SELECT c.org_id, list_name, k.customer_id, k.status, sum(c.delta)
    FROM unnest(org_ids, customer_ids, statuses, deltas) AS c(org_id, customer_id, status, delta)
    CROSS JOIN LATERAL list_total_keys(c.customer_id, c.status) k
   GROUP BY c.org_id, k.customer_id, k.status
  HAVING sum(c.delta) <> 0;
  IF FOUND THEN
    INSERT INTO list_total_pending DEFAULT VALUES ON CONFLICT DO NOTHING;
  END IF;
END $$;

-- Statement triggers: customer_id and status of each row ('' / 0 where the list has no such
-- column). An UPDATE counts only rows whose keys changed. Invoices and subscriptions share one
-- function; the list's name is the trigger's argument.
CREATE FUNCTION list_totals_on_customer_status_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  list_name text := TG_ARGV[0];
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM list_totals_record(list_name, array_agg(org_id), array_agg(customer_id), array_agg(status),
      array_agg(1::bigint)) FROM added;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM list_totals_record(list_name, array_agg(org_id), array_agg(customer_id), array_agg(status),
      array_agg(-1::bigint)) FROM removed;
  ELSE
    PERFORM list_totals_record(list_name, array_agg(c.org_id), array_agg(c.customer_id), array_agg(c.status),
      array_agg(c.delta))
      FROM (SELECT b.org_id, b.customer_id, b.status, -1::bigint AS delta
              FROM removed b JOIN added a USING (id)
             WHERE (a.org_id, a.customer_id, a.status) IS DISTINCT FROM (b.org_id, b.customer_id, b.status)
            UNION ALL
            SELECT a.org_id, a.customer_id, a.status, 1
              FROM removed b JOIN added a USING (id)
             WHERE (a.org_id, a.customer_id, a.status) IS DISTINCT FROM (b.org_id, b.customer_id, b.status)) c;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION list_totals_on_customers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM list_totals_record('customers', array_agg(org_id), array_agg(0::bigint), array_agg(''::text),
      array_agg(1::bigint)) FROM added;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM list_totals_record('customers', array_agg(org_id), array_agg(0::bigint), array_agg(''::text),
      array_agg(-1::bigint)) FROM removed;
  ELSE
    PERFORM list_totals_record('customers', array_agg(c.org_id), array_agg(0::bigint), array_agg(''::text),
      array_agg(c.delta))
      FROM (SELECT b.org_id, -1::bigint AS delta FROM removed b JOIN added a USING (id) WHERE a.org_id <> b.org_id
            UNION ALL
            SELECT a.org_id, 1 FROM removed b JOIN added a USING (id) WHERE a.org_id <> b.org_id) c;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER invoices_list_totals_insert AFTER INSERT ON invoices
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customer_status_rows('invoices');
CREATE TRIGGER invoices_list_totals_update AFTER UPDATE ON invoices
  REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customer_status_rows('invoices');
CREATE TRIGGER invoices_list_totals_delete AFTER DELETE ON invoices
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customer_status_rows('invoices');

CREATE TRIGGER subscriptions_list_totals_insert AFTER INSERT ON subscriptions
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customer_status_rows('subscriptions');
CREATE TRIGGER subscriptions_list_totals_update AFTER UPDATE ON subscriptions
  REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customer_status_rows('subscriptions');
CREATE TRIGGER subscriptions_list_totals_delete AFTER DELETE ON subscriptions
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customer_status_rows('subscriptions');

CREATE TRIGGER customers_list_totals_insert AFTER INSERT ON customers
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customers();
CREATE TRIGGER customers_list_totals_update AFTER UPDATE ON customers
  REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customers();
CREATE TRIGGER customers_list_totals_delete AFTER DELETE ON customers
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION list_totals_on_customers();

-- At commit: this transaction's changes, summed per key, added to the totals in key order.
CREATE FUNCTION list_totals_fold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH moved AS (
    DELETE FROM list_total_changes WHERE txid = NEW.txid
    RETURNING org_id, list, customer_id, status, delta
  )
  INSERT INTO list_totals AS t (org_id, list, customer_id, status, total)
  SELECT org_id, list, customer_id, status, sum(delta) FROM moved
   GROUP BY org_id, list, customer_id, status
  HAVING sum(delta) <> 0
   ORDER BY org_id, list, customer_id, status
  ON CONFLICT (org_id, list, customer_id, status) DO UPDATE SET total = t.total + EXCLUDED.total;
  DELETE FROM list_total_pending WHERE txid = NEW.txid;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER list_totals_fold_at_commit AFTER INSERT ON list_total_pending
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION list_totals_fold();

-- Rows written before this migration.
INSERT INTO list_totals (org_id, list, customer_id, status, total)
SELECT i.org_id, 'invoices', k.customer_id, k.status, count(*)
  FROM invoices i CROSS JOIN LATERAL list_total_keys(i.customer_id, i.status) k
 GROUP BY i.org_id, k.customer_id, k.status;
INSERT INTO list_totals (org_id, list, customer_id, status, total)
SELECT s.org_id, 'subscriptions', k.customer_id, k.status, count(*)
  FROM subscriptions s CROSS JOIN LATERAL list_total_keys(s.customer_id, s.status) k
 GROUP BY s.org_id, k.customer_id, k.status;
INSERT INTO list_totals (org_id, list, customer_id, status, total)
SELECT org_id, 'customers', 0, '', count(*) FROM customers GROUP BY org_id;
