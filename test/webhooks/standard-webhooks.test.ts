import { randomBytes, randomUUID } from 'node:crypto';
import { verify as verifyServiceSignature } from '@octokit/webhooks-methods';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createCreditGrant,
  createCreditNote,
  expireCreditGrants,
  recordPayment,
  runBilling,
  usageSource,
} from '../../libs/billing/index.js';
import { afterCreditsMoved, createAlert } from '../../libs/guardrails/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { setOrganizationSettings } from '../../libs/organizations/index.js';
import {
  EMITTED_EVENT_TYPES,
  type EmittedEventType,
  WEBHOOK_PAYLOADS,
  WebhookDeliveryHeaders,
} from '../../libs/schemas/index.js';
import { cancelSubscription, changeSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { signingKeyId, type WebhookDispatcher } from '../../libs/webhooks/index.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { recordCredentials } from '../helpers/run-log.js';
import {
  eventually,
  type ReceivedDelivery,
  type Receiver,
  registerEndpoint,
  standardSignatures,
  standardVerifies,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

/**
 * Every delivery carries the Standard Webhooks headers beside the spec's X-Service-Signature, and a
 * receiver verifies it with the `standardwebhooks` package and the secret exactly as shown, or
 * with `@octokit/webhooks-methods` on X-Service-Signature. Real Postgres, the real dispatcher, a
 * real HTTP receiver on 127.0.0.1; the events come from the billing flows themselves.
 */
describe('Standard Webhooks signatures', () => {
  let api: TestApi;
  let dispatcher: WebhookDispatcher;
  const receivers: Receiver[] = [];
  /** One delivery of every event type to one endpoint, which the first tests read. */
  let everyType: { org: TestOrg; endpoint: { id: string; secret: string }; deliveries: ReceivedDelivery[] };

  beforeAll(async () => {
    api = await startTestApi();
    // retries more than a second apart, so that each attempt's webhook-timestamp is its own
    dispatcher = startDispatcher(api.platform.db, { retryDelaysMs: [1100, 1100, 1100, 1100] });
    const org = await createTestOrg(api.platform.db);
    const target = await receiver();
    const endpoint = await createEndpoint(org, target.url, [
      'invoice.*',
      'subscription.*',
      'payment.*',
      'credit_grant.*',
      'alert.*',
      'credit_note.*',
    ]);
    await emitEveryEventType(org);
    // one of each type, a second invoice.posted (the cancel's final invoice), two more
    // credit_grant.created, a second subscription.created (the one whose invoice is a grace draft)
    const deliveries = await target.waitFor(EMITTED_EVENT_TYPES.length + 4);
    everyType = { org, endpoint, deliveries };
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await api?.close();
  });

  async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
    const started = await startReceiver(...args);
    receivers.push(started);
    return started;
  }

  const createEndpoint = (org: TestOrg, url: string, events: string[]) =>
    registerEndpoint(api, org.apiKey, { url, events });

  /** A subscription of one seat: one subscription.created event. */
  async function subscribeOne(org: TestOrg): Promise<void> {
    const { db } = api.platform;
    const { seats } = await basicCatalog(db, org.orgId);
    await subscribe(db, org.orgId, {
      customer_id: await customerIn(db, org.orgId),
      items: [{ product_id: seats, quantity: 1 }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
  }

  /** One event of every type the service emits, through the billing flows that emit them. */
  async function emitEveryEventType(org: TestOrg): Promise<void> {
    const { db } = api.platform;
    const { seats } = await basicCatalog(db, org.orgId);
    const customerId = await customerIn(db, org.orgId, { state_province: 'AB' });
    const subscription = await subscribe(db, org.orgId, {
      customer_id: customerId,
      items: [{ product_id: seats, quantity: 10 }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
    const run = await runBilling(db, {
      usage: usageSource(new PostgresUsageAggregator(db)),
      subscriptionIds: [subscription.id],
      now: new Date('2026-02-01T00:00:00Z'),
      post: true,
    });
    const invoiceId = run.invoice_ids[0]!;
    // a credit note of 1.00 + GST: a credit memo of 1.05 on the open invoice (no grant)
    const invoice = await getInvoice(db, org.orgId, invoiceId);
    await db.transaction((tx) =>
      createCreditNote(tx, {
        invoiceId,
        input: { reason: 'other', lines: [{ invoice_item_id: invoice.items[0]!.id, amount: '1.00' }] },
      }),
    );
    await db.transaction((tx) => recordPayment(tx, { invoiceId, amount: '103.95', method: 'CARD' }));
    await db.transaction((tx) =>
      changeSubscription(tx, {
        subscriptionId: subscription.id,
        change: { items: [{ id: subscription.items[0]!.id, quantity: 12 }] },
        now: new Date('2026-02-10T00:00:00Z'),
      }),
    );
    // credit_grant.created twice; the final invoice of the cancel uses up the first (depleted); the
    // second pays usage only (none here) and expires when its expiry comes
    await db.transaction((tx) =>
      createCreditGrant(tx, { customerId, input: { amount: '1.00', category: 'promotional' } }),
    );
    await db.transaction((tx) =>
      createCreditGrant(tx, {
        customerId,
        input: {
          amount: '2.00',
          category: 'promotional',
          applies_to: 'usage',
          expires_at: '2099-01-01T00:00:00Z',
        },
      }),
    );
    // a credit alert crosses at once (nothing available against the upcoming invoice), then a grant
    // brings the projection back: alert.triggered, alert.resolved
    await createAlert(db, api.usage.readStores, org.orgId, {
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '1000',
    });
    await db.transaction((tx) =>
      createCreditGrant(tx, {
        customerId,
        input: { amount: '5000.00', category: 'promotional', applies_to: 'usage' },
      }),
    );
    await afterCreditsMoved(db, api.usage.readStores, [{ orgId: org.orgId, customerId }]);
    await db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: new Date('2026-02-15T00:00:00Z') }),
    );
    await expireCreditGrants(db, new Date('2099-01-01T00:00:00Z'));
    // a grace period makes the period's invoice a DRAFT: invoice.created
    await setOrganizationSettings(db, org.orgId, { invoiceGraceHours: 24 });
    const graced = await subscribe(db, org.orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
    await runBilling(db, {
      usage: usageSource(new PostgresUsageAggregator(db)),
      subscriptionIds: [graced.id],
      now: new Date('2026-02-01T00:00:00Z'),
    });
  }

  const typeOf = (delivery: ReceivedDelivery) => delivery.headers['x-service-event'] as EmittedEventType;

  it('are verified by standardwebhooks and @octokit/webhooks-methods on every event type', async () => {
    const { endpoint, deliveries } = everyType;
    expect(new Set(deliveries.map(typeOf))).toEqual(new Set(EMITTED_EVENT_TYPES));
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    for (const delivery of deliveries) {
      const type = typeOf(delivery);
      // the package, with the secret exactly as the creation response showed it
      const verified = new Webhook(endpoint.secret).verify(
        delivery.body,
        delivery.headers as Record<string, string>,
      );
      expect(verified, type).toEqual(JSON.parse(delivery.body));
      expect(
        await verifyServiceSignature(
          endpoint.secret,
          delivery.body,
          delivery.headers['x-service-signature'] as string,
        ),
        type,
      ).toBe(true);
      // the body is what the OpenAPI document says this type's body is, no field more or less
      const payload = JSON.parse(delivery.body);
      expect(WEBHOOK_PAYLOADS[type].parse(payload), type).toEqual(payload);
      expect(() => WebhookDeliveryHeaders.parse(delivery.headers), type).not.toThrow();
      expect(delivery.headers['webhook-id'], type).toBe(payload.id);
      expect(delivery.headers['x-service-delivery'], type).toBe(payload.id);
      expect(
        Math.abs(Number(delivery.headers['webhook-timestamp']) - delivery.receivedAt / 1000),
        type,
      ).toBeLessThan(5);
      expect(standardSignatures(delivery), type).toHaveLength(1);
    }
  });

  it('records per attempt which key signed each header, never the secret', async () => {
    const { org, endpoint } = everyType;
    const [event] = await storedEvents(api.platform.db, endpoint.id);
    const response = await api.request({ path: `/webhook-events/${event!.id}`, key: org.apiKey });
    const keyId = signingKeyId(endpoint.secret);
    expect(response.json().data.attempt_history).toEqual([
      expect.objectContaining({
        attempt: 1,
        signatures: { x_service_signature: keyId, webhook_signature: [keyId] },
      }),
    ]);
    expect(response.body).not.toContain(endpoint.secret);
    const read = await api.request({ path: `/webhook-endpoints/${endpoint.id}`, key: org.apiKey });
    expect(read.json().data.secret_key_id).toBe(keyId);
  });

  it('are rejected by the package when the body, id, timestamp or signature is tampered with', async () => {
    const { endpoint, deliveries } = everyType;
    const delivery = deliveries[0]!;
    const headers = delivery.headers as Record<string, string>;
    const standard = new Webhook(endpoint.secret);
    const tampered: [string, string, Record<string, string>][] = [
      ['body', delivery.body.replace('"type":"', '"type":"x'), headers],
      ['body, one byte added', `${delivery.body} `, headers],
      ['id', delivery.body, { ...headers, 'webhook-id': randomUUID() }],
      [
        'timestamp',
        delivery.body,
        { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1) },
      ],
      [
        'signature',
        delivery.body,
        { ...headers, 'webhook-signature': `v1,${randomBytes(32).toString('base64')}` },
      ],
      ['no signature', delivery.body, { ...headers, 'webhook-signature': '' }],
    ];
    for (const [what, body, changed] of tampered) {
      expect(() => standard.verify(body, changed), what).toThrow(WebhookVerificationError);
    }
    expect(() =>
      new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(delivery.body, headers),
    ).toThrow(WebhookVerificationError);
    expect(
      await verifyServiceSignature(endpoint.secret, `${delivery.body} `, headers['x-service-signature']!),
    ).toBe(false);
    expect(standard.verify(delivery.body, headers)).toBeDefined();
  });

  it('are refused as a replay once the timestamp is more than 5 minutes old', () => {
    const { endpoint, deliveries } = everyType;
    const delivery = deliveries[0]!;
    const sentAt = Number(delivery.headers['webhook-timestamp']) * 1000;
    vi.useFakeTimers({ toFake: ['Date'], now: sentAt + 6 * 60 * 1000 });
    try {
      expect(() =>
        new Webhook(endpoint.secret).verify(delivery.body, delivery.headers as Record<string, string>),
      ).toThrow(/too old/);
    } finally {
      vi.useRealTimers();
    }
  });

  it('carry a fresh timestamp and valid signatures on every retry, with the same id and bytes', async () => {
    const org = await createTestOrg(api.platform.db);
    const target = await receiver((_, count) => ({ status: count < 3 ? 500 : 200 }));
    const endpoint = await createEndpoint(org, target.url, ['subscription.*']);
    await subscribeOne(org);
    const attempts = await target.waitFor(3, 15_000);
    const timestamps = attempts.map((a) => Number(a.headers['webhook-timestamp']));
    expect(timestamps[1]).toBeGreaterThan(timestamps[0]!);
    expect(timestamps[2]).toBeGreaterThan(timestamps[1]!);
    expect(new Set(attempts.map((a) => a.headers['webhook-signature'])).size).toBe(3);
    for (const attempt of attempts) {
      expect(attempt.body).toBe(attempts[0]!.body);
      expect(attempt.headers['webhook-id']).toBe(attempts[0]!.headers['webhook-id']);
      expect(standardVerifies(endpoint.secret, attempt)).toBe(true);
      expect(
        await verifyServiceSignature(
          endpoint.secret,
          attempt.body,
          attempt.headers['x-service-signature'] as string,
        ),
      ).toBe(true);
    }
    // an earlier attempt's signature does not carry over to a later timestamp
    const replayed = {
      ...attempts[2]!.headers,
      'webhook-signature': attempts[0]!.headers['webhook-signature'],
    };
    expect(standardVerifies(endpoint.secret, { body: attempts[2]!.body, headers: replayed })).toBe(false);
    const [event] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'SUCCESS',
    );
    const history = (await api.request({ path: `/webhook-events/${event!.id}`, key: org.apiKey })).json().data
      .attempt_history as { at: string; response_code: number }[];
    expect(history.map((a) => a.response_code)).toEqual([500, 500, 200]);
    expect(history.map((a) => Math.floor(Date.parse(a.at) / 1000))).toEqual(timestamps);
  });

  it('keep working for a secret made before, in both schemes', async () => {
    const org = await createTestOrg(api.platform.db);
    const target = await receiver();
    const endpoint = await createEndpoint(org, target.url, ['subscription.*']);
    // secrets were whsec_ + base64url; pick one with both characters standard base64 lacks
    let bytes = randomBytes(32);
    while (!/-.*_|_.*-/.test(bytes.toString('base64url'))) bytes = randomBytes(32);
    const legacy = `whsec_${bytes.toString('base64url')}`;
    recordCredentials(legacy);
    await api.platform.db.query('UPDATE webhook_endpoints SET secret = $2 WHERE id = $1', [
      endpoint.id,
      legacy,
    ]);
    await subscribeOne(org);
    const [delivery] = await target.waitFor(1);
    expect(
      await verifyServiceSignature(
        legacy,
        delivery!.body,
        delivery!.headers['x-service-signature'] as string,
      ),
    ).toBe(true);
    // the same 32 bytes in standard base64, as the README converts them
    const converted = `whsec_${Buffer.from(legacy.slice(6), 'base64url').toString('base64')}`;
    expect(standardVerifies(converted, delivery!)).toBe(true);
    expect(() => new Webhook(legacy)).toThrow();
  });
});
