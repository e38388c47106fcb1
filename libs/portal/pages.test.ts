import { describe, expect, it } from 'vitest';
import type { PrintableInvoice } from '../invoice-documents/index.js';
import type { Alert, CreditNote, Subscription } from '../schemas/index.js';
import {
  type InvoiceSummary,
  type PortalAlertsView,
  type PortalHome,
  renderErrorPage,
  renderInvoicePage,
  renderPortalHome,
} from './pages.js';
import type { PortalCredits, PortalUsage } from './usage-source.js';

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

const base = 'https://billing.example';

const subscription = (over: Partial<Subscription> = {}): Subscription =>
  ({
    id: 7,
    object: 'subscription',
    customer_id: 1,
    status: 'active',
    title: 'Team <plan>',
    current_period_start: '2026-11-01T00:00:00.000Z',
    current_period_end: '2026-12-01T00:00:00.000Z',
    items: [
      {
        id: 1,
        product_id: 1,
        product_name: 'Seats',
        quantity: 3,
        unit_price: '10.00000000',
        usage_type: 'licensed',
        included_units: '0.00000000',
        usage_limit: null,
      },
      {
        id: 2,
        product_id: 2,
        product_name: 'API calls',
        quantity: 1,
        unit_price: '0.00100000',
        usage_type: 'metered',
        included_units: '1500.00000000',
        usage_limit: null,
      },
    ],
    ...over,
  }) as Subscription;

const summary = (over: Partial<InvoiceSummary>): InvoiceSummary => ({
  id: 'i1',
  invoice_number: 'INV-000001',
  invoice_date: '2026-10-01',
  due_date: '2026-10-31',
  status: 'POSTED',
  total: '1200.00000000',
  balance: '1200.00000000',
  currency: 'JPY',
  ...over,
});

function home(over: Partial<PortalHome> = {}): string {
  return renderPortalHome({
    locale: 'en',
    base,
    path: '/portal/pst_x',
    organization: 'Org & Co',
    customerName: 'Customer',
    expiresAt: new Date('2026-12-01T00:00:00Z'),
    today: '2026-11-30',
    subscriptions: [],
    usage: new Map(),
    invoices: [],
    linksOf: (invoice) => ({
      page: `/portal/pst_x/invoices/${invoice.id}`,
      printable: `/portal/pst_x/invoices/${invoice.id}/html`,
      pdf: `/portal/pst_x/invoices/${invoice.id}/pdf`,
    }),
    ...over,
  });
}

const upcomingUsage = (over: Partial<NonNullable<PortalUsage['upcoming']>> = {}): PortalUsage => ({
  usage: {
    period_start: '2026-11-01',
    period_end: '2026-12-01',
    as_of: '2026-11-15T00:00:00.000Z',
    currency: 'CAD',
    items: [
      {
        subscription_item_id: 2,
        product_name: 'API calls',
        unit_label: null,
        quantity: '20.00000000',
        included_units: '1500.00000000',
        billable_quantity: '0.00000000',
        amount: '1.50000000',
      },
    ],
  },
  daily: [
    { date: '2026-11-01', subscription_item_id: 2, quantity: '12.00000000' },
    { date: '2026-11-01', subscription_item_id: 9, quantity: '99.00000000' },
    { date: '2026-11-02', subscription_item_id: 2, quantity: '8.00000000' },
  ],
  upcoming: {
    invoice_date: '2026-12-01',
    currency: 'CAD',
    lines: [
      { description: 'Seats <3>', quantity: '3.0000', unit_price: '10.00000000', amount: '30.00000000' },
    ],
    subtotal: '30.00000000',
    tax: '4.50000000',
    total: '34.50000000',
    credits_applied: '0.00000000',
    amount_due: '34.50000000',
    ...over,
  },
});

describe("the portal's subscriptions", () => {
  it('shows a licensed item by its quantity, a metered one by its included units, and the period', () => {
    const html = home({ subscriptions: [subscription()], usage: 'unavailable' });
    expect(html).toContain('<h3>Team &lt;plan&gt; <span class="status">Active</span></h3>');
    expect(html).toContain('<p class="lead">Current period: November 1, 2026 to December 1, 2026</p>');
    expect(html).toContain('<tr><td>Seats</td><td>Licensed</td><td class="num">3</td></tr>');
    expect(html).toContain('<tr><td>API calls</td><td>Metered</td><td class="num">1,500</td></tr>');
    expect(html).toContain('<p class="note">Usage figures are not available on this page yet.</p>');
    expect(html).toContain('<p class="note">The upcoming invoice is not available on this page yet.</p>');
  });

  it('says usage is unavailable only for a metered item, and no upcoming invoice for an ended one', () => {
    const licensedOnly = subscription({ items: [subscription().items[0]!] });
    const html = home({ subscriptions: [licensedOnly], usage: 'unavailable' });
    expect(html).not.toContain('Usage figures are not available');
    expect(html).toContain('The upcoming invoice is not available');
    for (const status of ['canceled', 'expired'] as const) {
      const ended = home({ subscriptions: [subscription({ status })], usage: 'unavailable' });
      expect(ended, status).not.toContain('The upcoming invoice is not available');
      expect(ended, status).toContain('Usage figures are not available');
    }
  });

  it("charts each metered item's own days, with its amount so far in the usage currency", () => {
    const html = home({ subscriptions: [subscription()], usage: new Map([[7, upcomingUsage()]]) });
    expect(html).toContain('<h3>Current usage: API calls</h3>\n<p>Amount so far, before tax: 1.50 CAD</p>');
    // the chart's total is the item's 12 + 8, not the other item's 99
    expect(html).toContain('<figcaption>Total for the period: 20</figcaption>');
  });

  it('prints the upcoming invoice, and the credits it applies only when there are some', () => {
    const html = home({ subscriptions: [subscription()], usage: new Map([[7, upcomingUsage()]]) });
    expect(html).toContain('<h3>Upcoming invoice · December 1, 2026</h3>');
    expect(html).toContain(
      '<tr><td>Seats &lt;3&gt;</td><td class="num">3</td><td class="num">30.00 CAD</td></tr>',
    );
    expect(html).toContain(
      '<tr><td>Subtotal</td><td class="num">30.00 CAD</td></tr><tr><td>Tax</td><td class="num">4.50 CAD</td></tr><tr class="grand"><td>Total</td><td class="num">34.50 CAD</td></tr></table>',
    );
    expect(html).not.toContain('Credits applied');
    const credited = home({
      subscriptions: [subscription()],
      usage: new Map([[7, upcomingUsage({ credits_applied: '10.00000000', amount_due: '24.50000000' })]]),
    });
    expect(credited).toContain(
      '<tr><td>Credits applied</td><td class="num">-10.00 CAD</td></tr><tr class="grand"><td>Amount due</td><td class="num">24.50 CAD</td></tr></table>',
    );
  });
});

describe("the portal's invoices", () => {
  it('lists each invoice with its status, total, what is left to pay and its due date', () => {
    const html = home({
      invoices: [
        summary({}),
        summary({
          id: 'i2',
          invoice_number: 'INV-000002',
          status: 'PAID',
          balance: '0.00000000',
          due_date: '2026-12-15',
        }),
        summary({ id: 'i3', invoice_number: 'INV-000003', status: 'WITHDRAWN', due_date: '2026-12-15' }),
      ],
    });
    // INV-000001 was due 2026-10-31, before today (2026-11-30)
    expect(html).toContain(
      '<td><span class="status overdue">Posted · OVERDUE</span></td>\n<td class="num">1,200 JPY</td>\n<td class="num">1,200 JPY</td>\n<td>October 31, 2026</td>',
    );
    expect(html).toContain(
      '<td><span class="status paid">Paid</span></td>\n<td class="num">1,200 JPY</td>\n<td class="num">0 JPY</td>\n<td>December 15, 2026</td>',
    );
    // a withdrawn invoice keeps a balance that nobody is asked to pay
    expect(html).toContain(
      '<td><span class="status ">Withdrawn</span></td>\n<td class="num">1,200 JPY</td>\n<td class="num">0 JPY</td>',
    );
    expect(html).toContain('<td class="hide-narrow">October 1, 2026</td>');
  });

  it('links every page in its language, and to the same page in the other one', () => {
    const html = home({ locale: 'fr-CA', invoices: [summary({})] });
    expect(html).toContain('<html lang="fr-CA">');
    expect(html).toContain(
      `<a href="${base}/portal/pst_x/invoices/i1?locale=fr-CA" aria-label="Voir la facture INV-000001">`,
    );
    expect(html).toContain(`<a href="${base}/portal/pst_x?locale=en" hreflang="en" lang="en">English</a>`);
    expect(html).toContain('<span class="org">Org &amp; Co</span>');
    expect(html).toContain('<footer class="bottom">Ce lien expire le 1 décembre 2026.</footer>');
  });
});

describe("the portal's credits and credit notes", () => {
  const credits: PortalCredits = {
    currency: 'KWD',
    available: '5.00000000',
    projected: '2.50000000',
    grants: [
      {
        name: 'Promo <x>',
        status: 'ACTIVE',
        amount: '10.00000000',
        remaining: '4.00000000',
        expires_at: null,
      },
      {
        name: 'Top-up',
        status: 'PENDING',
        amount: '1.00000000',
        remaining: '1.00000000',
        expires_at: '2027-01-31T00:00:00.000Z',
      },
    ],
  };

  it('prints what is available and projected, and each grant: remaining of its amount, its expiry', () => {
    const html = home({ credits });
    expect(html).toContain(
      '<tr><td>Available now</td><td class="num">5.000 KWD</td></tr><tr><td>Projected after the upcoming invoices</td><td class="num">2.500 KWD</td></tr>',
    );
    expect(html).toContain(
      '<tr><td>Promo &lt;x&gt;</td><td>Active</td><td class="num">4.000 KWD / 10.000 KWD</td><td>Never</td></tr>',
    );
    expect(html).toContain(
      '<tr><td>Top-up</td><td>Awaiting payment</td><td class="num">1.000 KWD / 1.000 KWD</td><td>January 31, 2027</td></tr>',
    );
    expect(html).not.toContain('No credits.');
  });

  it('prints no balance it cannot work out, and says when there is no grant', () => {
    for (const unknown of [{ available: null }, { projected: null }]) {
      const html = home({ credits: { ...credits, ...unknown, grants: [] } });
      expect(html).not.toContain('Available now');
      expect(html).toContain('<p class="note">No credits.</p>');
    }
    expect(home({ credits: { ...credits, grants: [credits.grants[0]!] } })).not.toContain('No credits.');
  });

  it('lists credit notes with the number of their invoice, their reason and their total', () => {
    const note = {
      id: 'n1',
      number: 'CN-000001',
      invoice_id: 'i1',
      currency: 'KWD',
      reason: 'duplicate',
      total: '1.25000000',
      created_at: '2026-11-20T10:00:00.000Z',
    } as CreditNote;
    const html = home({
      invoices: [summary({})],
      creditNotes: { notes: [note], linksOf: () => ({ printable: '/n1/html', pdf: '/n1/pdf' }) },
    });
    expect(html).toContain(
      '<th scope="row">CN-000001</th>\n<td>November 20, 2026</td>\n<td>INV-000001</td>\n<td>Duplicate charge</td>\n<td class="num">1.250 KWD</td>',
    );
    expect(html).not.toContain('No credit notes.');
    expect(home({ creditNotes: { notes: [], linksOf: () => ({ printable: '', pdf: '' }) } })).toContain(
      '<p class="note">No credit notes.</p>',
    );
  });
});

describe("the portal's alert rows and form", () => {
  const view = (list: Alert[], over: Partial<PortalAlertsView> = {}): string =>
    home({
      alerts: {
        list,
        subscriptions: [{ id: 7, title: 'Team <plan>' }],
        csrf: 'token',
        addPath: '/portal/pst_x/alerts',
        removePath: (id) => `/portal/pst_x/alerts/${id}/delete`,
        ...over,
      },
    });

  it('names an unnamed alert by what it watches, says its status, and removes only a usage_amount one', () => {
    const html = view([
      alert({ name: '', status: 'TRIGGERED' }),
      alert({ id: 'a2', metric: 'credit_balance', name: 'low', value: null }),
    ]);
    expect(html).toContain(
      '<tr><td>Usage amount this period</td><td>Usage amount this period</td><td class="num">1,200.00</td><td class="num">300.00</td><td>Reached</td><td><form',
    );
    expect(html).toContain('aria-label="Remove alert Usage amount this period"');
    expect(html.match(/<button type="submit" aria-label=/g)).toHaveLength(1);
    expect(html).toContain('<td>OK</td><td></td></tr>');
    // a credit_balance alert is money: cents where its currency is not known
    expect(html).toContain(
      '<tr><td>low</td><td>Projected credit</td><td class="num">1,200.00</td><td class="num"></td>',
    );
  });

  it('offers the form on the customer subscriptions, and says why the last add was refused', () => {
    const html = view([], { refused: '<b>too many</b>' });
    expect(html).toContain('<option value="7">Team &lt;plan&gt;</option>');
    expect(html).toContain(
      '<p class="note" role="alert">The alert was not added: &lt;b&gt;too many&lt;/b&gt;</p>',
    );
    expect(html).toContain('<p class="note">No alerts.</p>');
    expect(view([], { subscriptions: [] })).not.toContain('<form');
  });

  it("carries the session's CSRF token in every form, the add form and each remove form", () => {
    const html = view([alert({}), alert({ id: 'a2', name: 'other' })], { csrf: 'csrf<&>' });
    const forms = html.match(/<form [^>]*>[\s\S]*?<\/form>/g)!;
    expect(forms).toHaveLength(3);
    for (const form of forms) {
      expect(form).toContain('<input type="hidden" name="csrf" value="csrf&lt;&amp;&gt;">');
    }
  });

  it("heads the name column without the form's (optional)", () => {
    expect(view([alert({})])).toContain('<table><thead><tr><th scope="col">Name</th>');
  });
});

describe('the invoice page', () => {
  const printable = (over: Partial<PrintableInvoice> = {}): PrintableInvoice => ({
    locale: 'en',
    invoice: {
      ...summary({ currency: 'CAD', total: '57.49000000', balance: '37.49000000', status: 'PARTIALLY_PAID' }),
      object: 'invoice',
      customer_id: 1,
      subscription_id: 7,
      period_start: '2026-10-01',
      period_end: '2026-10-31',
      amount_paid: '20.00000000',
      amount_refunded: '0.00000000',
      tax_amount: '7.50000000',
      items: [
        {
          id: 1,
          product_id: 2,
          description: 'Seats <b>',
          quantity: '2.0000',
          unit_price: '24.99500000',
          line_total_pre_tax: '49.99000000',
          tax_amount: '7.50000000',
          tax_type: 'GST_QST',
        },
      ],
      created_at: '2026-10-01T00:00:00.000Z',
      updated_at: '2026-10-01T00:00:00.000Z',
    } as PrintableInvoice['invoice'],
    seller: { name: 'Seller & Co', contactName: null, addressLines: [], email: null, taxId: null },
    customer: { name: 'Buyer <i>', contactName: null, addressLines: [], email: null, taxId: null },
    subtotal: '49.99000000',
    taxLines: [
      { name: 'GST', amount: '2.50000000' },
      { name: 'QST', amount: '5.00000000' },
    ],
    overdue: false,
    amountDue: '37.49000000',
    ...over,
  });
  const page = (over: Partial<PrintableInvoice> = {}, back?: string) =>
    renderInvoicePage({
      base,
      path: '/i/tok',
      printable: printable(over),
      links: { page: '/i/tok', printable: '/i/tok/html', pdf: '/i/tok/pdf' },
      ...(back === undefined ? {} : { back }),
      footer: 'Footer',
    });

  it('prints the lines, the taxes by name, the total tax, paid and what is left to pay', () => {
    const html = page({ amountDue: '0.00000000' });
    expect(html).toContain(
      '<tr><td>Seats &lt;b&gt;</td><td class="num">2</td><td class="num hide-narrow">24.995 CAD</td><td class="num">49.99 CAD</td></tr>',
    );
    expect(html).toContain(
      '<tr><td>GST</td><td class="num">2.50 CAD</td></tr><tr><td>QST</td><td class="num">5.00 CAD</td></tr>\n<tr><td>Total tax</td><td class="num">7.50 CAD</td></tr>',
    );
    expect(html).toContain('<tr><td>Paid</td><td class="num">20.00 CAD</td></tr>');
    // what is left to pay, not the stored balance
    expect(html).toContain('<tr class="grand"><td>Balance due</td><td class="num">0.00 CAD</td></tr>');
    expect(html).toContain('<dt>Balance due</dt><dd>0.00 CAD</dd>');
    expect(html).toContain('<p class="lead">Buyer &lt;i&gt;</p>');
    expect(html).toContain('<span class="org">Seller &amp; Co</span>');
    expect(page({ taxLines: [] })).toContain('<tr><td>Tax</td><td class="num">7.50 CAD</td></tr>');
    expect(page({ locale: 'fr-CA' }).replace(/\u00a0/g, ' ')).toContain(
      '<tr><td>TPS</td><td class="num">2,50 $</td></tr><tr><td>TVQ</td><td class="num">5,00 $</td></tr>',
    );
  });

  it('states the due date, the period, the total with its taxes and where the PDF is', () => {
    const html = page({ taxLines: [{ name: 'HST', amount: '7.50000000' }] });
    expect(html).toContain('<dt>Due date</dt><dd>October 31, 2026</dd>');
    expect(html).toContain('<dt>Period</dt><dd>October 1, 2026 to October 31, 2026</dd>');
    expect(html).toContain('<dt>Total</dt><dd>57.49 CAD</dd>');
    // one tax line is still a total of the taxes above it
    expect(html).toContain(
      '<tr><td>HST</td><td class="num">7.50 CAD</td></tr>\n<tr><td>Total tax</td><td class="num">7.50 CAD</td></tr>\n<tr class="grand"><td>Total</td><td class="num">57.49 CAD</td></tr>',
    );
    expect(html).toContain(
      `<p class="actions"><a href="${base}/i/tok/pdf?locale=en" download>Download PDF</a><a class="secondary" href="${base}/i/tok/html?locale=en">`,
    );
  });

  it('escapes its footer', () => {
    const html = renderInvoicePage({
      base,
      path: '/i/tok',
      printable: printable(),
      links: { page: '/i/tok', printable: '/i/tok/html', pdf: '/i/tok/pdf' },
      footer: 'Until <b>May</b> & after',
    });
    expect(html).toContain('<footer class="bottom">Until &lt;b&gt;May&lt;/b&gt; &amp; after</footer>');
  });

  it('marks the status overdue or paid, and links back to the portal only from a session', () => {
    expect(page({ overdue: true })).toContain('<span class="status overdue">Partially paid · OVERDUE</span>');
    const paid = printable();
    paid.invoice = { ...paid.invoice, status: 'PAID' };
    expect(page(paid)).toContain('<span class="status paid">Paid</span>');
    expect(page()).toContain('<span class="status">Partially paid</span>');
    expect(page()).not.toContain('Back to all invoices');
    expect(page({}, '/portal/pst_x')).toContain(
      `<p><a href="${base}/portal/pst_x?locale=en">← Back to all invoices</a></p>`,
    );
  });
});

describe('error pages', () => {
  it('say what happened, each in its own words', () => {
    const title = (kind: Parameters<typeof renderErrorPage>[0]) =>
      /<h1>([^<]*)<\/h1>/.exec(renderErrorPage(kind, 'en', base))![1];
    expect(
      ['not-found', 'expired', 'revoked', 'forbidden', 'unavailable'].map((k) => title(k as never)),
    ).toEqual([
      'Page not found',
      'Link expired',
      'Link no longer valid',
      'This form has expired',
      'Something went wrong',
    ]);
  });
});
