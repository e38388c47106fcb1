-- Events sent again (POST /webhook-endpoints/{id}/recover, POST /webhook-events/{id}/retry) go out
-- one at a time per endpoint, in order of occurrence (outbox_id: the order the domain events were
-- emitted in, also within one transaction, then id): an ordered event is not attempted while an
-- earlier ordered event of its endpoint is still PENDING or RETRYING (libs/webhooks/delivery.ts).
ALTER TABLE webhook_events ADD COLUMN ordered boolean NOT NULL DEFAULT false;
CREATE INDEX webhook_events_ordered_waiting ON webhook_events (endpoint_id, outbox_id, id)
  WHERE ordered AND status IN ('PENDING', 'RETRYING');
