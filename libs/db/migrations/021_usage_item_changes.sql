-- Items whose lifetime ended after ingest may have cached it: a change removed the item, or its
-- subscription ended. Each ingest process polls this table and drops those items from its item
-- cache, so usage dated after the end is refused within a poll, not the cache's TTL
-- (docs/decisions.md "Usage outside its item's lifetime is refused"). changed_at is the clock at
-- the write; readers look back over a margin, since transactions commit out of that order.
CREATE TABLE usage_item_changes (
  id                   bigserial PRIMARY KEY,
  org_id               bigint NOT NULL,
  subscription_item_id bigint NOT NULL,
  changed_at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX usage_item_changes_at ON usage_item_changes (changed_at);

CREATE FUNCTION usage_item_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_item_changes (org_id, subscription_item_id) VALUES (NEW.org_id, NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER subscription_items_removed AFTER UPDATE OF removed_at ON subscription_items
  FOR EACH ROW WHEN (OLD.removed_at IS DISTINCT FROM NEW.removed_at) EXECUTE FUNCTION usage_item_removed();

CREATE FUNCTION usage_subscription_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_item_changes (org_id, subscription_item_id)
    SELECT org_id, id FROM subscription_items WHERE org_id = NEW.org_id AND subscription_id = NEW.id;
  RETURN NULL;
END $$;
CREATE TRIGGER subscriptions_ended AFTER UPDATE OF ended_at ON subscriptions
  FOR EACH ROW WHEN (OLD.ended_at IS DISTINCT FROM NEW.ended_at) EXECUTE FUNCTION usage_subscription_ended();
