import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayMoney } from '../../libs/i18n/index.js';
import { formatMoney, parseMoney } from '../../libs/money/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import {
  type BillingScenario,
  insertBillingScenario,
  insertCustomer,
  insertInvoice,
  insertProduct,
  insertSubscription,
} from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createSession, linksOf, open, pathOf } from './support.js';

/**
 * The portal and hosted invoice pages over HTTP: what a link opens (one customer of one
 * organization), what it never opens, expiry, tampering, headers, languages, and that every link
 * on every page leads somewhere.
 */
let api: TestApi;
let org: TestOrg;
let other: TestOrg;
let scenario: BillingScenario;
let ontarioInvoice: { id: string; invoiceNumber: string };
let otherOrgInvoice: { id: string; invoiceNumber: string };
let otherOrgCustomerId: number;

const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-robots-tag': 'noindex, nofollow',
};

beforeAll(async () => {
  api = await startTestApi();
  const { db } = api.platform;
  org = await createTestOrg(db);
  other = await createTestOrg(db);
  scenario = await insertBillingScenario(db, org.orgId);
  ontarioInvoice = await insertInvoice(db, org.orgId, {
    customerId: scenario.customers.ontario.id,
    subscriptionId: scenario.subscriptions.trialing,
    status: 'POSTED',
    items: [
      { productId: scenario.products.seats, description: 'Ontario seats', quantity: '2', unitPrice: '49.99' },
    ],
  });
  const stranger = await insertCustomer(db, other.orgId, {
    name: 'Other Org Customer',
    country: 'CA',
    state_province: 'QC',
  });
  otherOrgCustomerId = stranger.id;
  const product = (await insertProduct(db, other.orgId, { name: 'Other seats', sku: 'OS', unitPrice: '10' }))
    .id;
  const subscription = await insertSubscription(db, other.orgId, {
    customerId: stranger.id,
    items: [{ productId: product, quantity: 1, unitPrice: '10' }],
  });
  otherOrgInvoice = await insertInvoice(db, other.orgId, {
    customerId: stranger.id,
    subscriptionId: subscription.id,
    items: [{ productId: product, description: 'Other org line', quantity: '1', unitPrice: '10' }],
  });
});
afterAll(() => api?.close());

function expectPageHeaders(response: { headers: Record<string, unknown>; body: string }): void {
  for (const [name, value] of Object.entries(PAGE_HEADERS)) expect(response.headers[name], name).toBe(value);
  const csp = String(response.headers['content-security-policy']);
  expect(csp).toMatch(/^default-src 'self'/);
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("base-uri 'none'");
  // the portal's pages post their forms to the portal itself; a printable document posts nowhere
  if (String(response.headers['content-type']).startsWith('text/html')) {
    const portalPage = response.body.includes('<a class="skip" href="#main">');
    expect(csp).toContain(portalPage ? "form-action 'self'" : "form-action 'none'");
  }
}

describe('POST /portal-sessions', () => {
  it('answers 201 with a link of 256 random bits, stored only as a hash, expiring when asked', async () => {
    const before = Date.now();
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.ontario.id,
      expires_in: 600,
    });
    expect(Object.keys(session).sort()).toEqual(
      ['id', 'object', 'customer_id', 'locale', 'url', 'created_at', 'expires_at'].sort(),
    );
    expect(session).toMatchObject({
      object: 'portal_session',
      customer_id: scenario.customers.ontario.id,
      locale: 'en',
    });
    expect(session.url).toMatch(/^http:\/\/localhost(:80)?\/portal\/pst_[A-Za-z0-9_-]{43}$/);
    const expires = Date.parse(session.expires_at) - before;
    expect(expires).toBeGreaterThan(590_000);
    expect(expires).toBeLessThan(610_000);
    const token = session.url.split('/').pop()!;
    const { rows } = await api.platform.db.query<{ stored: string }>(
      'SELECT t::text AS stored FROM portal_sessions t WHERE id = $1',
      [session.id],
    );
    expect(rows[0]!.stored).not.toContain(token);
    expect(rows[0]!.stored).not.toContain(token.slice(4));
    const second = await createSession(api, org.apiKey, { customer_id: scenario.customers.ontario.id });
    expect(second.url).not.toBe(session.url);
  });

  it('expires in 3600 s by default and accepts exactly 86400 s, the longest allowed', async () => {
    // openapi.json (CreatePortalSession.expires_in): 60 to 86400; default 3600
    for (const [body, seconds] of [
      [{}, 3600],
      [{ expires_in: 86_400 }, 86_400],
    ] as const) {
      // created_at is in every answer (the first test lists the keys); the helper's type omits it
      const session = (await createSession(api, org.apiKey, {
        customer_id: scenario.customers.ontario.id,
        ...body,
      })) as Awaited<ReturnType<typeof createSession>> & { created_at: string };
      expect(Date.parse(session.expires_at) - Date.parse(session.created_at), JSON.stringify(body)).toBe(
        seconds * 1000,
      );
    }
  });

  it('defaults to French for a customer in Quebec, English elsewhere; a locale given wins', async () => {
    const { quebec, ontario, newYork } = scenario.customers;
    expect((await createSession(api, org.apiKey, { customer_id: quebec.id })).locale).toBe('fr-CA');
    expect((await createSession(api, org.apiKey, { customer_id: ontario.id })).locale).toBe('en');
    expect((await createSession(api, org.apiKey, { customer_id: newYork.id })).locale).toBe('en');
    expect((await createSession(api, org.apiKey, { customer_id: quebec.id, locale: 'en' })).locale).toBe(
      'en',
    );
    expect((await createSession(api, org.apiKey, { customer_id: ontario.id, locale: 'fr-CA' })).locale).toBe(
      'fr-CA',
    );
  });

  it('rejects bad input by field, another organization’s customer as 404, and a missing key as 401', async () => {
    const post = (payload: unknown) =>
      api.request({ method: 'POST', path: '/portal-sessions', key: org.apiKey, payload: payload as object });
    for (const [payload, field] of [
      [{}, 'customer_id'],
      [{ customer_id: scenario.customers.quebec.id, expires_in: 59 }, 'expires_in'],
      [{ customer_id: scenario.customers.quebec.id, expires_in: 86_401 }, 'expires_in'],
      [{ customer_id: scenario.customers.quebec.id, locale: 'fr' }, 'locale'],
      [{ customer_id: scenario.customers.quebec.id, colour: 'red' }, 'colour'],
    ] as const) {
      const response = await post(payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(422);
      expect(response.json().details.map((d: { field: string }) => d.field)).toContain(field);
    }
    expect((await post({ customer_id: otherOrgCustomerId })).statusCode).toBe(404);
    expect((await post({ customer_id: 999_999_999 })).statusCode).toBe(404);
    const keyless = await api.request({
      method: 'POST',
      path: '/portal-sessions',
      payload: { customer_id: scenario.customers.quebec.id },
    });
    expect(keyless.statusCode).toBe(401);
  });
});

describe('the portal page', () => {
  it("shows the customer's subscriptions and issued invoices, in French for Quebec, with the headers", async () => {
    const session = await createSession(api, org.apiKey, { customer_id: scenario.customers.quebec.id });
    const response = await open(api, session.url);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expectPageHeaders(response);
    const page = response.body;
    expect(page).toContain('<html lang="fr-CA">');
    expect(page).toContain('Abonnements');
    expect(page).toContain('Team plan');
    expect(page).toContain('Factures');
    // every issued invoice of this customer, never the draft, never another customer's
    for (const [status, invoice] of Object.entries(scenario.invoices)) {
      if (status === 'DRAFT') expect(page).not.toContain(`>${invoice.invoiceNumber}<`);
      else expect(page, status).toContain(`>${invoice.invoiceNumber}<`);
    }
    expect(page).not.toContain(ontarioInvoice.invoiceNumber);
    expect(page).not.toContain('Maple Analytics');
    // Quebec's number format, French statuses and dates
    expect(page).toMatch(/\d,\d{2,8}\u00a0\$/);
    expect(page).toContain('Partiellement payée');
    expect(page).toMatch(/\d{1,2} [a-zéû.]+ \d{4}/);
    expect(page).not.toMatch(/<script/i);
    expect(page).not.toMatch(/\sstyle=/i);
    // usage and the upcoming invoice come from the usage read-back, which the api wires in
    expect(page).not.toContain('La consommation n&#39;est pas encore affichée');
    expect(page).toContain('Prochaine facture');
    const english = await open(api, `${session.url}?locale=en`);
    expect(english.body).toContain('<html lang="en">');
    // a partly paid invoice's row: its total, then what is left to pay
    const partly = scenario.invoices.PARTIALLY_PAID;
    const left = formatMoney(parseMoney(partly.total) - parseMoney(partly.amountPaid));
    expect(parseMoney(partly.amountPaid) > 0n && parseMoney(left) > 0n).toBe(true);
    const row = english.body.slice(english.body.indexOf(`>${partly.invoiceNumber}<`)).split('</tr>')[0]!;
    expect(row).toContain(
      `<td class="num">${displayMoney(partly.total, 'CAD', 'en')}</td>\n<td class="num">${displayMoney(left, 'CAD', 'en')}</td>`,
    );
    expect(english.body).toContain('Subscriptions');
    expect(english.body).toMatch(/\d\.\d{2,8} CAD/);
  });

  it('reaches every link on every page: pages, printable documents, PDFs, stylesheet, language switch', async () => {
    const session = await createSession(api, org.apiKey, { customer_id: scenario.customers.quebec.id });
    const seen = new Set<string>();
    const queue = [session.url];
    const origin = new URL(session.url).origin;
    let pdfs = 0;
    let pages = 0;
    while (queue.length > 0) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      seen.add(url);
      const response = await open(api, url);
      expect(response.statusCode, url).toBe(200);
      expectPageHeaders(response);
      const type = String(response.headers['content-type']);
      if (type.startsWith('application/pdf')) {
        pdfs++;
        expect(response.rawPayload.subarray(0, 5).toString('latin1')).toBe('%PDF-');
      }
      if (!type.startsWith('text/html')) continue;
      pages++;
      for (const link of linksOf(response.body)) {
        if (link === '#main') continue;
        expect(link.startsWith(origin), link).toBe(true);
        if (!seen.has(link)) queue.push(link);
      }
    }
    // home and the six issued invoices, each with its page, printable and PDF, in two languages
    expect(pdfs).toBe(12);
    expect(pages).toBeGreaterThanOrEqual(2 + 6 * 2 * 2);
  });

  it("opens only its own customer's invoices: another customer's or organization's is a 404 page without data", async () => {
    const quebec = await createSession(api, org.apiKey, { customer_id: scenario.customers.quebec.id });
    const ontario = await createSession(api, org.apiKey, { customer_id: scenario.customers.ontario.id });
    const mine = await open(api, `${ontario.url}/invoices/${ontarioInvoice.id}`);
    expect(mine.statusCode).toBe(200);
    expect(mine.body).toContain(ontarioInvoice.invoiceNumber);
    for (const suffix of ['', '/print', '/pdf']) {
      for (const [url, invoice] of [
        [`${ontario.url}/invoices/${scenario.invoices.POSTED.id}`, scenario.invoices.POSTED],
        [`${quebec.url}/invoices/${ontarioInvoice.id}`, ontarioInvoice],
        [`${quebec.url}/invoices/${otherOrgInvoice.id}`, otherOrgInvoice],
        [`${quebec.url}/invoices/${scenario.invoices.DRAFT.id}`, scenario.invoices.DRAFT],
        [`${quebec.url}/invoices/not-a-uuid`, undefined],
      ] as const) {
        const response = await open(api, `${url}${suffix}`);
        expect(response.statusCode, `${url}${suffix}`).toBe(404);
        expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
        expectPageHeaders(response);
        if (invoice) expect(response.body).not.toContain(invoice.invoiceNumber);
        expect(response.body).not.toContain('Amélie');
        expect(response.body).not.toContain('Maple');
      }
    }
  });

  it('says when the session ends under an invoice opened from it, and how long a closed invoice stays under its hosted link', async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      locale: 'en',
    });
    const page = (await open(api, `${session.url}/invoices/${scenario.invoices.PAID.id}`)).body;
    expect(page).toContain('This link expires on');
    expect(page).not.toContain('This page stays available until');
    const hosted = (
      await api.request({ path: `/invoices/${scenario.invoices.PAID.id}`, key: org.apiKey })
    ).json().data.hosted_url as string;
    const hostedPage = (await open(api, `${hosted}?locale=en`)).body;
    expect(hostedPage).toContain('This page stays available until');
    expect(hostedPage).not.toContain('This link expires on');
  });

  it('reads no usage for a subscription without a metered item: nothing to show, no upcoming invoice', async () => {
    const source = api.app.deps.portalUsage!;
    expect(await source.read(org.orgId, scenario.subscriptions.trialing)).toBeUndefined();
    const metered = await source.read(org.orgId, scenario.subscriptions.active);
    expect(metered?.usage.items.length).toBeGreaterThan(0);
  });

  it('answers an expired session 410 and an unknown one 404, as pages with no data', async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      expires_in: 60,
    });
    await api.platform.db.query(
      `UPDATE portal_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [session.id],
    );
    for (const suffix of [
      '',
      `/invoices/${scenario.invoices.POSTED.id}`,
      `/invoices/${scenario.invoices.POSTED.id}/pdf`,
    ]) {
      const expired = await open(api, `${session.url}${suffix}`);
      expect(expired.statusCode).toBe(410);
      expectPageHeaders(expired);
      expect(expired.body).not.toContain('Amélie');
      expect(expired.body).not.toContain('INV-');
    }
    const unknown = await open(api, `${new URL(session.url).origin}/portal/pst_${'A'.repeat(43)}`);
    expect(unknown.statusCode).toBe(404);
    expectPageHeaders(unknown);
    expect((await open(api, `${new URL(session.url).origin}/portal/whatever/else/here`)).statusCode).toBe(
      404,
    );
  });

  it("writes a page for an unknown link in the browser's preferred of French and English; ?locale= wins", async () => {
    const unknown = `http://localhost/portal/pst_${'B'.repeat(43)}`;
    const langOf = async (acceptLanguage: string, url = unknown) => {
      const response = await open(api, url, acceptLanguage ? { 'accept-language': acceptLanguage } : {});
      expect(response.statusCode).toBe(404);
      return /<html lang="([^"]+)"/.exec(response.body)?.[1];
    };
    expect(await langOf('fr-CA,fr;q=0.9,en;q=0.8')).toBe('fr-CA');
    expect(await langOf(' FR')).toBe('fr-CA');
    expect(await langOf('en-US,en;q=0.9,fr-CA;q=0.8')).toBe('en');
    expect(await langOf('frr-DE,de;q=0.8')).toBe('en'); // North Frisian, not French
    // neither first: French, which the browser weighs above English
    expect(await langOf('de-DE,fr;q=0.9,en;q=0.8')).toBe('fr-CA');
    expect(await langOf('')).toBe('en');
    expect(await langOf('fr-CA', `${unknown}?locale=en`)).toBe('en');
    expect(await langOf('en', `${unknown}?locale=fr-CA`)).toBe('fr-CA');
  });

  it('opens nothing once any one character of the token is changed', async () => {
    const session = await createSession(api, org.apiKey, { customer_id: scenario.customers.quebec.id });
    const token = session.url.split('/').pop()!;
    const base = session.url.slice(0, -token.length);
    for (let i = 0; i < token.length; i++) {
      const changed = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      const response = await open(api, base + changed);
      expect(response.statusCode, `position ${i}`).toBe(404);
      expect(response.body).not.toContain('Amélie');
    }
    expect((await open(api, base + token)).statusCode).toBe(200);
  });
});

describe('the spend alerts form', () => {
  /** The CSRF token the session's home page carries in its forms. */
  async function csrfOf(url: string): Promise<string> {
    const page = await open(api, url);
    expect(page.statusCode).toBe(200);
    return /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
  }
  const post = (url: string, path: string, form: Record<string, string>) =>
    api.app.inject({
      method: 'POST',
      url: `${pathOf(url)}${path}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });
  const alertsOf = async (customerId: number) =>
    (
      await api.platform.db.query<{
        id: string;
        metric: string;
        threshold: string;
        created_in_portal: boolean;
      }>(
        'SELECT id, metric, threshold::text, created_in_portal FROM alerts WHERE org_id = $1 AND customer_id = $2',
        [org.orgId, customerId],
      )
    ).rows;
  const makeAlert = async (payload: Record<string, unknown>) => {
    const response = await api.request({ method: 'POST', path: '/alerts', key: org.apiKey, payload });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().data.id as string;
  };

  it("refuses a form without this session's CSRF token with 403: none, empty, shorter, changed, another session's", async () => {
    const customerId = scenario.customers.quebec.id;
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const csrf = await csrfOf(session.url);
    const other = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const otherCsrf = await csrfOf(other.url);
    expect(otherCsrf).not.toBe(csrf);
    const before = await alertsOf(customerId);
    const form = { subscription_id: String(scenario.subscriptions.active), threshold: '10' };
    for (const given of [
      undefined,
      '',
      csrf.slice(0, -1),
      `${csrf}x`,
      `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}`,
      otherCsrf,
    ]) {
      const response = await post(
        session.url,
        '/alerts',
        given === undefined ? form : { ...form, csrf: given },
      );
      expect(response.statusCode, String(given)).toBe(403);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    }
    const alertId = await makeAlert({
      subscription_id: scenario.subscriptions.active,
      metric: 'usage_amount',
      threshold: '7',
    });
    expect((await post(session.url, `/alerts/${alertId}/delete`, { csrf: otherCsrf })).statusCode).toBe(403);
    expect((await post(session.url, `/alerts/${alertId}/delete`, {})).statusCode).toBe(403);
    expect((await alertsOf(customerId)).length).toBe(before.length + 1);
  });

  it("refuses a revoked or expired session's form with 410, its own token notwithstanding", async () => {
    const customerId = scenario.customers.quebec.id;
    const before = (await alertsOf(customerId)).length;
    const form = { subscription_id: String(scenario.subscriptions.active), threshold: '10' };
    const revoked = await createSession(api, org.apiKey, { customer_id: customerId });
    const revokedCsrf = await csrfOf(revoked.url);
    const revoke = await api.request({
      method: 'DELETE',
      path: `/portal-sessions/${revoked.id}`,
      key: org.apiKey,
    });
    expect(revoke.statusCode).toBe(204);
    expect((await post(revoked.url, '/alerts', { ...form, csrf: revokedCsrf })).statusCode).toBe(410);
    const expired = await createSession(api, org.apiKey, { customer_id: customerId });
    const expiredCsrf = await csrfOf(expired.url);
    await api.platform.db.query(
      `UPDATE portal_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [expired.id],
    );
    expect((await post(expired.url, '/alerts', { ...form, csrf: expiredCsrf })).statusCode).toBe(410);
    expect((await alertsOf(customerId)).length).toBe(before);
  });

  it("adds a usage_amount alert on the customer's own subscription only, whatever metric the form names", async () => {
    const customerId = scenario.customers.quebec.id;
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'fr-CA' });
    const csrf = await csrfOf(session.url);
    const before = await alertsOf(customerId);
    const base = { csrf, threshold: '10' };
    // another customer's subscription, and ids that name no subscription
    for (const subscription_id of [String(scenario.subscriptions.pastDue), '0', '-1', 'abc', '']) {
      const response = await post(session.url, '/alerts', { ...base, subscription_id });
      expect(response.statusCode, subscription_id).toBe(404);
    }
    expect(await alertsOf(scenario.customers.ontario.id)).toEqual([]);
    const added = await post(session.url, '/alerts?locale=fr-CA', {
      csrf,
      subscription_id: String(scenario.subscriptions.active),
      threshold: ' 12,5 ',
      metric: 'credit_balance',
    });
    expect(added.statusCode, added.body).toBe(303);
    expect(added.headers.location).toBe(`${pathOf(session.url)}?locale=fr-CA`);
    const made = (await alertsOf(customerId)).filter((alert) => !before.some((old) => old.id === alert.id));
    expect(made).toEqual([
      { id: made[0]!.id, metric: 'usage_amount', threshold: '12.50000000', created_in_portal: true },
    ]);
    // an invalid threshold is the page again, 422, saying why
    const refused = await post(session.url, '/alerts', {
      ...base,
      subscription_id: String(scenario.subscriptions.active),
      threshold: '-3',
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('threshold');
  });

  it('names the alert as the form does, without its surrounding spaces; a blank name is no name', async () => {
    const customerId = scenario.customers.quebec.id;
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const csrf = await csrfOf(session.url);
    const form = { csrf, subscription_id: String(scenario.subscriptions.active), threshold: '5' };
    const namesAfter = async (name: string) => {
      const before = await alertsOf(customerId);
      expect((await post(session.url, '/alerts', { ...form, name })).statusCode).toBe(303);
      const made = (await alertsOf(customerId)).find((alert) => !before.some((old) => old.id === alert.id))!;
      const read = await api.request({ path: `/alerts/${made.id}`, key: org.apiKey });
      return read.json().data.name as string;
    };
    expect(await namesAfter('  Budget  ')).toBe('Budget');
    expect(await namesAfter('   ')).toBe('');
  });

  it('offers only subscriptions still running in the add form: none for a customer whose one is canceled', async () => {
    const quebec = await createSession(api, org.apiKey, { customer_id: scenario.customers.quebec.id });
    const options = (body: string) =>
      [...body.matchAll(/<option value="(\d+)">/g)].map((match) => Number(match[1]));
    expect(options((await open(api, quebec.url)).body)).toEqual([scenario.subscriptions.active]);
    const ontario = await createSession(api, org.apiKey, { customer_id: scenario.customers.ontario.id });
    expect(options((await open(api, ontario.url)).body).sort()).toEqual(
      [scenario.subscriptions.trialing, scenario.subscriptions.pastDue].sort(),
    );
    const newYork = await createSession(api, org.apiKey, { customer_id: scenario.customers.newYork.id });
    const page = (await open(api, newYork.url)).body;
    expect(page).toContain('aria-labelledby="alerts"');
    expect(options(page)).toEqual([]);
    expect(page).not.toContain('class="alert-form"');
    // an expired subscription has ended as surely as a canceled one: not offered either
    const { db } = api.platform;
    const lapsed = (
      await insertCustomer(db, org.orgId, { name: 'Lapsed', country: 'CA', state_province: 'ON' })
    ).id;
    const items = [{ productId: scenario.products.seats, quantity: 1, unitPrice: '10' }];
    await insertSubscription(db, org.orgId, { customerId: lapsed, status: 'expired', title: 'Ended', items });
    const running = await insertSubscription(db, org.orgId, { customerId: lapsed, title: 'Running', items });
    const lapsedSession = await createSession(api, org.apiKey, { customer_id: lapsed });
    expect(options((await open(api, lapsedSession.url)).body)).toEqual([running.id]);
  });

  it("removes only the customer's own usage_amount alerts: another customer's, or another metric, is a 404", async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      locale: 'en',
    });
    const csrf = await csrfOf(session.url);
    const theirs = await makeAlert({
      subscription_id: scenario.subscriptions.pastDue,
      metric: 'usage_amount',
      threshold: '10',
    });
    const otherMetric = await makeAlert({
      subscription_id: scenario.subscriptions.active,
      metric: 'credit_balance',
      threshold: '1',
    });
    for (const id of [theirs, otherMetric, 'not-an-alert']) {
      expect((await post(session.url, `/alerts/${id}/delete`, { csrf })).statusCode, id).toBe(404);
    }
    for (const id of [theirs, otherMetric]) {
      expect((await api.request({ path: `/alerts/${id}`, key: org.apiKey })).statusCode).toBe(200);
    }
    const mine = await makeAlert({
      subscription_id: scenario.subscriptions.active,
      metric: 'usage_amount',
      threshold: '10',
    });
    // the page offers a remove button on the customer's usage_amount alerts only
    const page = (await open(api, session.url)).body;
    expect(page).toContain(`/alerts/${mine}/delete`);
    expect(page).not.toContain(`/alerts/${otherMetric}/delete`);
    expect(page).not.toContain(`/alerts/${theirs}/delete`);
    const removed = await post(session.url, `/alerts/${mine.toUpperCase()}/delete`, { csrf });
    expect(removed.statusCode).toBe(303);
    expect(removed.headers.location).toBe(pathOf(session.url));
    expect((await api.request({ path: `/alerts/${mine}`, key: org.apiKey })).statusCode).toBe(404);
  });
});

describe('hosted invoice links', () => {
  async function hostedUrlOf(id: string, key = org.apiKey): Promise<string> {
    const response = await api.request({ path: `/invoices/${id}`, key });
    expect(response.statusCode).toBe(200);
    return response.json().data.hosted_url;
  }

  it('is on every invoice of GET /invoices and /invoices/{id}, and opens that invoice in its customer language', async () => {
    const list = (await api.request({ path: '/invoices?limit=100', key: org.apiKey })).json().data as {
      id: string;
      hosted_url: string;
    }[];
    expect(list.length).toBeGreaterThan(0);
    for (const invoice of list) expect(invoice.hosted_url).toBe(await hostedUrlOf(invoice.id));
    const url = await hostedUrlOf(scenario.invoices.POSTED.id);
    expect(url).toMatch(/^http:\/\/localhost(:80)?\/portal\/invoice\/hinv_[A-Za-z0-9_-]{64}$/);
    const page = await open(api, url);
    expect(page.statusCode).toBe(200);
    expectPageHeaders(page);
    expect(page.body).toContain('<html lang="fr-CA">');
    expect(page.body).toContain(scenario.invoices.POSTED.invoiceNumber);
    expect(page.body).not.toContain(scenario.invoices.PAID.invoiceNumber);
    const english = await open(api, (await hostedUrlOf(ontarioInvoice.id)) + '');
    expect(english.body).toContain('<html lang="en">');
    for (const link of linksOf(page.body).filter((link) => link !== '#main')) {
      const response = await open(api, link);
      expect(response.statusCode, link).toBe(200);
      expectPageHeaders(response);
    }
    const pdf = await open(api, `${url}/pdf`);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.headers['content-disposition']).toBe(
      `attachment; filename="${scenario.invoices.POSTED.invoiceNumber}.pdf"`,
    );
  });

  it('opens nothing for a changed character, a draft, or a link signed for another organization', async () => {
    const url = await hostedUrlOf(scenario.invoices.POSTED.id);
    const token = url.split('/').pop()!;
    const base = url.slice(0, -token.length);
    for (let i = 0; i < token.length; i++) {
      const changed = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      const response = await open(api, base + changed);
      expect(response.statusCode, `position ${i}`).toBe(404);
      expect(response.body).not.toContain(scenario.invoices.POSTED.invoiceNumber);
    }
    expect((await open(api, await hostedUrlOf(scenario.invoices.DRAFT.id))).statusCode).toBe(404);
    // org B's key over org A's invoice id: the signature is org A's alone
    const { hostedInvoiceUrl } = await import('../../libs/invoices/index.js');
    const { rows } = await api.platform.db.query<{ hosted_link_key: Buffer }>(
      'SELECT hosted_link_key FROM organizations WHERE id = $1',
      [other.orgId],
    );
    const forged = hostedInvoiceUrl(new URL(url).origin, scenario.invoices.POSTED.id, {
      key: rows[0]!.hosted_link_key,
      generation: 0,
    });
    expect((await open(api, forged)).statusCode).toBe(404);
    expect((await open(api, await hostedUrlOf(otherOrgInvoice.id, other.apiKey))).statusCode).toBe(200);
  });

  it('stays open until 90 days after the invoice is paid or withdrawn, then answers 410', async () => {
    const { db } = api.platform;
    for (const status of ['PAID', 'WITHDRAWN'] as const) {
      const invoice = scenario.invoices[status];
      const url = await hostedUrlOf(invoice.id);
      const { rows } = await db.query<{ closed_at: Date | null }>(
        'SELECT closed_at FROM invoices WHERE id = $1',
        [invoice.id],
      );
      expect(rows[0]!.closed_at, status).not.toBeNull();
      await db.query(`UPDATE invoices SET closed_at = now() - interval '89 days' WHERE id = $1`, [
        invoice.id,
      ]);
      expect((await open(api, url)).statusCode).toBe(200);
      await db.query(`UPDATE invoices SET closed_at = now() - interval '91 days' WHERE id = $1`, [
        invoice.id,
      ]);
      const expired = await open(api, url);
      expect(expired.statusCode).toBe(410);
      expectPageHeaders(expired);
      expect(expired.body).not.toContain(invoice.invoiceNumber);
      expect((await open(api, `${url}/pdf`)).statusCode).toBe(410);
    }
    // an open invoice has no end yet
    const posted = await db.query<{ closed_at: Date | null }>(
      'SELECT closed_at FROM invoices WHERE id = $1',
      [scenario.invoices.POSTED.id],
    );
    expect(posted.rows[0]!.closed_at).toBeNull();
  });

  it('makes links under PUBLIC_URL when it is set', async () => {
    const configured = await startTestApi({ env: { PUBLIC_URL: 'https://billing.example.com/' } });
    try {
      const { createTestOrg: makeOrg } = await import('../helpers/fixtures.js');
      const owner = await makeOrg(configured.platform.db);
      const customer = await insertCustomer(configured.platform.db, owner.orgId, {
        name: 'Pat',
        country: 'CA',
      });
      const session = await createSession(configured, owner.apiKey, { customer_id: customer.id });
      expect(session.url).toMatch(/^https:\/\/billing\.example\.com\/portal\/pst_/);
      expect(pathOf(session.url)).toMatch(/^\/portal\/pst_/);
    } finally {
      await configured.close();
    }
  });
});

describe('the contract', () => {
  it('documents POST /portal-sessions, hosted_url and the documents locale in openapi.json and llms.txt', async () => {
    const document = (await api.request({ path: '/openapi.json', key: org.apiKey })).json();
    const operation = document.paths['/portal-sessions'].post;
    expect(operation.operationId).toBe('createPortalSession');
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['201', '401', '404', '422']));
    expect(document.components.schemas.PublicInvoice.required).toContain('hosted_url');
    expect(document.components.schemas.PublicPortalSession.required).toEqual(
      expect.arrayContaining(['id', 'object', 'customer_id', 'url', 'expires_at']),
    );
    const html = document.paths['/invoices/{invoice_id}/html'].get;
    expect(html.parameters.map((p: { name: string }) => p.name)).toContain('locale');
    const llms = (await api.request({ path: '/llms.txt' })).body;
    expect(llms).toContain('/portal-sessions');
    // the pages for people are not API operations
    expect(Object.keys(document.paths).some((path) => path.startsWith('/portal/'))).toBe(false);
  });
});

describe('the API documents in a locale', () => {
  it('prints GET /invoices/{id}/html and /pdf in French on ?locale=fr-CA, and 422 for another locale', async () => {
    const id = scenario.invoices.POSTED.id;
    const html = await api.request({ path: `/invoices/${id}/html?locale=fr-CA`, key: org.apiKey });
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain('FACTURE');
    expect(html.body).toContain('Solde dû');
    expect((await api.request({ path: `/invoices/${id}/html?locale=de`, key: org.apiKey })).statusCode).toBe(
      422,
    );
  });
});
