-- Every change to an invoice, or to its items, moves invoices.version. The api keeps each
-- invoice's public JSON in memory under (id, version) (libs/invoices/rendered-pages.ts): a page of
-- invoices then reads 100 (id, version) pairs instead of 100 invoices and their items, and a
-- rendering can never outlive the data it was made from, whichever code path wrote the change.

ALTER TABLE invoices ADD COLUMN version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION invoices_next_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := OLD.version + 1;
  RETURN NEW;
END;
$$;

CREATE TRIGGER invoices_version BEFORE UPDATE ON invoices
  FOR EACH ROW EXECUTE FUNCTION invoices_next_version();

-- Items are written with their invoice today; should they change later, the invoice changes too.
-- An invoice row this transaction wrote itself (inserted, or already updated, so its version moved)
-- is skipped: nobody else can have seen it yet, and the billing run writes every invoice and its
-- items in one transaction.
CREATE FUNCTION invoice_items_touch_invoices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE invoices SET version = version + 1
     WHERE id IN (SELECT DISTINCT invoice_id FROM old_items) AND xmin <> pg_current_xact_id()::xid;
  ELSE
    UPDATE invoices SET version = version + 1
     WHERE id IN (SELECT DISTINCT invoice_id FROM new_items) AND xmin <> pg_current_xact_id()::xid;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER invoice_items_touch_invoices_insert AFTER INSERT ON invoice_items
  REFERENCING NEW TABLE AS new_items FOR EACH STATEMENT EXECUTE FUNCTION invoice_items_touch_invoices();
CREATE TRIGGER invoice_items_touch_invoices_update AFTER UPDATE ON invoice_items
  REFERENCING NEW TABLE AS new_items FOR EACH STATEMENT EXECUTE FUNCTION invoice_items_touch_invoices();
CREATE TRIGGER invoice_items_touch_invoices_delete AFTER DELETE ON invoice_items
  REFERENCING OLD TABLE AS old_items FOR EACH STATEMENT EXECUTE FUNCTION invoice_items_touch_invoices();
