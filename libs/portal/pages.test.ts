import { describe, expect, it } from 'vitest';
import type { Alert } from '../schemas/index.js';
import { type PortalHome, renderPortalHome } from './pages.js';
import type { PortalUsage } from './usage-source.js';

const alert = (over: Partial<Alert>): Alert => ({
  id: '00000000-0000-4000-8000-000000000001',
  object: 'alert',
  customer_id: 1,
  subscription_id: 7,
  subscription_item_id: null,
  metric: 'usage_amount',
  threshold: '1200.00000000',
  name: 'spend',
  status: 'OK',
  value: '300.00000000',
  triggered_at: null,
  created_at: '2026-11-01T00:00:00.000Z',
  ...over,
});

/** A usage read of subscription 7 in `currency`: only its currency matters here. */
const usageIn = (currency: string): PortalUsage =>
  ({ usage: { currency }, daily: [], upcoming: null }) as unknown as PortalUsage;

function page(alerts: Alert[], usage: PortalHome['usage'], creditsCurrency?: string): string {
  return renderPortalHome({
    locale: 'en',
    base: 'https://billing.example',
    path: '/portal/pst_x',
    organization: 'Org',
    customerName: 'Customer',
    expiresAt: new Date('2026-12-01T00:00:00Z'),
    today: '2026-11-30',
    subscriptions: [],
    usage,
    invoices: [],
    linksOf: () => ({}) as never,
    credits:
      creditsCurrency === undefined
        ? undefined
        : { currency: creditsCurrency, available: '0', projected: '0', grants: [] },
    alerts: {
      list: alerts,
      subscriptions: [],
      csrf: 'token',
      addPath: '/portal/pst_x/alerts',
      removePath: (id) => `/portal/pst_x/alerts/${id}/delete`,
    },
  });
}

/** The figures of the alerts table (the credits section's are not these). */
const cells = (html: string) =>
  [...html.slice(html.indexOf('<h2 id="alerts">')).matchAll(/<td class="num">([^<]*)<\/td>/g)].map(
    (m) => m[1],
  );

describe("the portal's alerts", () => {
  it("print a usage_amount alert's figures in its subscription's currency: yen whole, dinars to 3", () => {
    expect(cells(page([alert({})], new Map([[7, usageIn('JPY')]])))).toEqual(['1,200', '300']);
    expect(cells(page([alert({ threshold: '12.3' })], new Map([[7, usageIn('KWD')]])))).toEqual([
      '12.300',
      '300.000',
    ]);
  });

  it("print a credit_balance alert's in the credits' currency, and with cents where none is known", () => {
    const credit = alert({ metric: 'credit_balance', threshold: '50.00000000', value: null });
    expect(cells(page([credit], 'unavailable', 'JPY'))).toEqual(['50', '']);
    expect(cells(page([alert({})], 'unavailable'))).toEqual(['1,200.00', '300.00']);
    // another subscription's usage says nothing of this alert's currency
    expect(cells(page([alert({})], new Map([[8, usageIn('JPY')]])))).toEqual(['1,200.00', '300.00']);
  });

  it('print a usage_quantity alert as a quantity, whatever the currency', () => {
    const quantity = alert({ metric: 'usage_quantity', subscription_item_id: 3, threshold: '1500.5' });
    expect(cells(page([quantity], new Map([[7, usageIn('JPY')]])))).toEqual(['1,500.5', '300']);
  });
});
