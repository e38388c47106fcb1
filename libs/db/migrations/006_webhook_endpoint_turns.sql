-- The dispatcher claims each endpoint's earliest due events, a few per endpoint (libs/webhooks
-- claimDueDeliveries), so one endpoint that hangs cannot hold every delivery slot.
CREATE INDEX webhook_events_endpoint_due ON webhook_events (endpoint_id, next_attempt_at)
  WHERE status IN ('PENDING', 'RETRYING');
