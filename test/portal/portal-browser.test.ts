import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayDate, displayMoney, messagesFor } from '../../libs/i18n/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario } from '../helpers/billing-fixtures.js';
import { launchChromium, type TestBrowser, watchedPage as watchedBrowserPage } from '../helpers/browser.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createSession, open } from './support.js';

/** The portal in a real browser (test/helpers/browser.ts). */
/** Screenshots a person can look at after the run. */
const SCREENSHOTS = join(process.cwd(), '.cache', 'portal-screenshots');

let api: TestApi;
let org: TestOrg;
let scenario: BillingScenario;
let origin: string;
let browser: TestBrowser;
let context: BrowserContext;
/** What each day of January 2026 got, for the item charted (API calls, the first metered item). */
const posted = new Map<string, number>();

beforeAll(async () => {
  // the api's own portal usage source: the usage read-back (test/helpers/api.ts wires it as main does)
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, org.orgId);
  // real usage events through the public route, on some days of the subscription's period (January)
  const item = scenario.meteredItemIds[0]!;
  for (const [day, quantity] of [
    [2, 120],
    [3, 40],
    [15, 310],
    [16, 5],
    [31, 77],
  ] as const) {
    for (const half of [0.5, 0.5]) {
      const response = await api.request({
        method: 'POST',
        path: '/usage/events',
        key: org.apiKey,
        payload: {
          subscription_item_id: item,
          quantity: quantity * half,
          timestamp: `2026-01-${String(day).padStart(2, '0')}T${half === 0.5 ? '10' : '11'}:00:00Z`,
        },
        headers: { 'idempotency-key': `browser-${day}-${Math.random()}` },
      });
      expect(response.statusCode, response.body).toBe(201);
    }
    posted.set(`2026-01-${String(day).padStart(2, '0')}`, quantity);
  }
  origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await launchChromium({ acceptDownloads: true });
  context = browser.context;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

/** A page that records every problem; a download ends its navigation request on purpose. */
async function watchedPage(): Promise<{ page: Page; problems: string[] }> {
  return watchedBrowserPage(context, {
    ignoreFailed: (url) => url.endsWith('/pdf') || url.includes('/pdf?'),
  });
}

/** The portal URL on the listening server (sessions are made under its own address). */
function onServer(url: string): string {
  const parsed = new URL(url);
  return `${origin}${parsed.pathname}${parsed.search}`;
}

describe('the portal on the usage read-back', () => {
  it('shows the upcoming invoice and the usage figures the public API gives', async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      locale: 'en',
    });
    const page = (await open(api, session.url)).body;
    const subscriptionId = scenario.subscriptions.active;
    const upcoming = await api.request({
      method: 'GET',
      path: `/subscriptions/${subscriptionId}/upcoming-invoice`,
      key: org.apiKey,
    });
    expect(upcoming.statusCode, upcoming.body).toBe(200);
    const lines = upcoming.json().data.lines as { description: string }[];
    expect(lines.length).toBeGreaterThan(0);
    const escaped = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    for (const line of lines) expect(page).toContain(escaped(line.description));
    expect(page).not.toContain('not available');
  });
});

describe('prepaid credits in the portal', () => {
  it('shows the balance, what is projected, each grant with its expiry and what credits pay, in en and fr-CA', async () => {
    const customerId = scenario.customers.quebec.id;
    const grant = async (body: Record<string, unknown>) => {
      const response = await api.request({
        method: 'POST',
        path: `/customers/${customerId}/credit-grants`,
        key: org.apiKey,
        payload: body,
      });
      expect(response.statusCode, response.body).toBe(201);
    };
    await grant({
      amount: '40.00',
      category: 'promotional',
      name: 'Welcome credit',
      expires_at: '2099-03-15T00:00:00Z',
    });
    await grant({ amount: '100.00', category: 'paid', name: 'Top-up pack' });
    const balance = (
      await api.request({ method: 'GET', path: `/customers/${customerId}/credit-balance`, key: org.apiKey })
    ).json().data;
    expect(balance.available).toBe('40.00000000');
    const upcoming = (
      await api.request({
        method: 'GET',
        path: `/subscriptions/${scenario.subscriptions.active}/upcoming-invoice`,
        key: org.apiKey,
      })
    ).json().data;
    expect(upcoming.credits_applied).not.toBe('0.00000000');
    for (const locale of ['en', 'fr-CA'] as const) {
      const m = messagesFor(locale);
      const session = await createSession(api, org.apiKey, { customer_id: customerId, locale });
      const { page, problems } = await watchedPage();
      await page.goto(onServer(session.url));
      const credits = page.locator('section[aria-labelledby="credits"]');
      expect(await credits.locator('h2').textContent()).toBe(m.credits);
      const text = (await credits.textContent())!.replace(/\u00a0/g, ' ');
      const money = (amount: string) => displayMoney(amount, 'CAD', locale).replace(/\u00a0/g, ' ');
      expect(text).toContain(`${m.creditsAvailable}${money('40.00000000')}`);
      expect(text).toContain(`${m.creditsProjected}${money(balance.projected)}`);
      const rows = await credits.locator('table:not(.totals) tbody tr').allTextContents();
      expect(rows.map((row) => row.replace(/\u00a0/g, ' '))).toEqual([
        `Top-up pack${m.creditStatus.PENDING}${money('100.00000000')} / ${money('100.00000000')}${m.creditNeverExpires}`,
        `Welcome credit${m.creditStatus.ACTIVE}${money('40.00000000')} / ${money('40.00000000')}${displayDate('2099-03-15', locale)}`,
      ]);
      // the upcoming invoice says what the credits would pay and what is left to pay
      const totals = (await page.locator('table.totals').allTextContents()).join(' ').replace(/\u00a0/g, ' ');
      expect(totals).toContain(`${m.creditsApplied}${money(`-${upcoming.credits_applied}`)}`);
      expect(totals).toContain(`${m.amountDue}${money(upcoming.amount_due)}`);
      expect(problems).toEqual([]);
      await page.close();
    }
  });
});

describe('spend alerts in the portal', () => {
  it('adds and removes a usage_amount alert by its form, in en and fr-CA, and lists every alert', async () => {
    const customerId = scenario.customers.quebec.id;
    const subscriptionId = scenario.subscriptions.active;
    // an alert made through the API shows too, without a remove button (not a usage_amount one)
    const made = await api.request({
      method: 'POST',
      path: '/alerts',
      key: org.apiKey,
      payload: {
        subscription_id: subscriptionId,
        metric: 'credit_balance',
        threshold: '5',
        name: 'Low credit',
      },
    });
    expect(made.statusCode, made.body).toBe(201);
    for (const [locale, threshold, name] of [
      ['en', '250.50', 'Budget EN'],
      ['fr-CA', '300,25', 'Budget FR'],
    ] as const) {
      const m = messagesFor(locale);
      const session = await createSession(api, org.apiKey, { customer_id: customerId, locale });
      const { page, problems } = await watchedPage();
      await page.goto(onServer(session.url));
      const card = page.locator('section[aria-labelledby="alerts"]');
      expect(await card.locator('h2').textContent()).toBe(m.alerts);
      await card.getByLabel(m.alertThreshold).fill(threshold);
      await card.getByLabel(m.alertName).fill(name);
      await Promise.all([
        page.waitForURL(/\/portal\/pst_[^/?]+(\?locale=(en|fr-CA))?$/),
        card.getByRole('button', { name: m.addAlert }).click(),
      ]);
      const rows = (await page.locator('section[aria-labelledby="alerts"] tbody tr').allTextContents()).map(
        (row) => row.replace(/\u00a0/g, ' '),
      );
      expect(rows.some((row) => row.startsWith(name) && row.includes(m.alertMetric.usage_amount!))).toBe(
        true,
      );
      expect(rows.some((row) => row.startsWith('Low credit'))).toBe(true);
      const listed = (
        await api.request({ method: 'GET', path: `/alerts?customer_id=${customerId}`, key: org.apiKey })
      ).json().data as { id: string; name: string; threshold: string; metric: string }[];
      const added = listed.find((alert) => alert.name === name)!;
      expect(added).toMatchObject({
        metric: 'usage_amount',
        threshold: `${threshold.replace(',', '.')}000000`,
      });
      // removed by its own button
      await Promise.all([
        page.waitForURL(/\/portal\/pst_[^/?]+(\?locale=(en|fr-CA))?$/),
        page.getByRole('button', { name: m.removeAlert(name) }).click(),
      ]);
      expect(await page.getByRole('button', { name: m.removeAlert(name) }).count()).toBe(0);
      expect(await page.getByRole('button', { name: m.removeAlert('Low credit') }).count()).toBe(0);
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  it("refuses a form without its session's CSRF token (403), and any subscription not the customer's (404)", async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      locale: 'en',
    });
    const url = new URL(onServer(session.url));
    const page = await fetch(url);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const post = (body: Record<string, string>, path = '/alerts') =>
      fetch(`${url.origin}${url.pathname}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body).toString(),
        redirect: 'manual',
      });
    const ok = { subscription_id: String(scenario.subscriptions.active), threshold: '10' };
    expect((await post(ok)).status).toBe(403);
    expect((await post({ ...ok, csrf: `${csrf.slice(0, -1)}x` })).status).toBe(403);
    // another session's token is another session's: refused here
    const other = await createSession(api, org.apiKey, { customer_id: scenario.customers.ontario.id });
    const otherCsrf = /name="csrf" value="([^"]+)"/.exec(
      await (await fetch(onServer(other.url))).text(),
    )![1]!;
    expect((await post({ ...ok, csrf: otherCsrf })).status).toBe(403);
    // a subscription of another customer
    const foreign = await post({ ...ok, csrf, subscription_id: String(scenario.subscriptions.pastDue) });
    expect(foreign.status).toBe(404);
    const refused = await post({ ...ok, csrf, threshold: '-3' });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain('threshold');
    const accepted = await post({ ...ok, csrf });
    expect(accepted.status).toBe(303);
    // removing: only this customer's usage_amount alerts
    const theirs = await api.request({
      method: 'POST',
      path: '/alerts',
      key: org.apiKey,
      payload: { subscription_id: scenario.subscriptions.pastDue, metric: 'usage_amount', threshold: '10' },
    });
    expect(theirs.statusCode, theirs.body).toBe(201);
    const ours = await api.request({
      method: 'POST',
      path: '/alerts',
      key: org.apiKey,
      payload: { subscription_id: scenario.subscriptions.active, metric: 'credit_balance', threshold: '1' },
    });
    expect(ours.statusCode, ours.body).toBe(201);
    for (const id of [theirs.json().data.id as string, ours.json().data.id as string]) {
      expect((await post({ csrf }, `/alerts/${id}/delete`)).status).toBe(404);
      expect((await api.request({ method: 'GET', path: `/alerts/${id}`, key: org.apiKey })).statusCode).toBe(
        200,
      );
    }
  });
});

describe('the portal in Chromium', () => {
  it('draws the daily chart of real usage: one bar per day of the period, tall where usage was', async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      locale: 'en',
    });
    const { page, problems } = await watchedPage();
    await page.goto(onServer(session.url));
    const charts = page.locator('figure.chart');
    // the Team plan has two metered items: API calls (with usage) and Storage (none)
    expect(await charts.count()).toBe(2);
    const bars = charts.first().locator('svg rect.bar');
    expect(await bars.count()).toBe(31);
    const heights = await bars.evaluateAll((rects) =>
      rects.map((rect) => (rect as unknown as { getBBox(): { height: number } }).getBBox().height),
    );
    const labels = await bars.evaluateAll((rects) =>
      rects.map((rect) => rect.querySelector('title')?.textContent ?? ''),
    );
    for (let day = 1; day <= 31; day++) {
      const date = `2026-01-${String(day).padStart(2, '0')}`;
      const quantity = posted.get(date) ?? 0;
      expect(heights[day - 1]! > 0, date).toBe(quantity > 0);
      expect(labels[day - 1], date).toBe(`Jan ${day}: ${quantity}`);
    }
    // the tallest bar is the 15th (310 of an axis topped at 500)
    expect(heights.indexOf(Math.max(...heights))).toBe(14);
    expect(await charts.first().locator('figcaption').textContent()).toBe('Total for the period: 552');
    expect(await charts.first().locator('svg').getAttribute('role')).toBe('img');
    expect(await charts.nth(1).locator('svg rect.bar').count()).toBe(31);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('reaches an invoice by keyboard alone, downloads its PDF, and the PDF says what the page says', async () => {
    const session = await createSession(api, org.apiKey, { customer_id: scenario.customers.quebec.id });
    const invoice = scenario.invoices.PARTIALLY_PAID;
    const { page, problems } = await watchedPage();
    await page.goto(onServer(session.url));
    const target = `Voir la facture ${invoice.invoiceNumber}`;
    let reached = false;
    for (let presses = 0; presses < 200 && !reached; presses++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate("document.activeElement?.getAttribute('aria-label')")) === target;
    }
    expect(reached, 'Tab reaches the invoice link').toBe(true);
    // the focused link shows where focus is
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).not.toBe('none');
    await Promise.all([
      page.waitForURL(/\/invoices\/[0-9a-f-]{36}\?locale=fr-CA$/),
      page.keyboard.press('Enter'),
    ]);
    expect(await page.locator('h1').textContent()).toBe(`Facture ${invoice.invoiceNumber}`);

    // on to the PDF link, by keyboard too
    let onPdf = false;
    for (let presses = 0; presses < 50 && !onPdf; presses++) {
      await page.keyboard.press('Tab');
      onPdf = (await page.evaluate('document.activeElement?.textContent')) === 'Télécharger le PDF';
    }
    expect(onPdf, 'Tab reaches the PDF link').toBe(true);
    const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
    expect(download.suggestedFilename()).toBe(`${invoice.invoiceNumber}.pdf`);
    const file = await download.path();
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' }).replace(
      /\u00a0/g,
      ' ',
    );
    for (const expected of [
      'FACTURE',
      invoice.invoiceNumber,
      'Amélie Côté',
      'Solde dû',
      'Partiellement payée',
      '305,12281078 $',
      'TPS',
      'TVQ',
    ]) {
      expect(text, expected).toContain(expected);
    }
    expect(problems).toEqual([]);
    await page.close();
  });

  it('looks right in English and in French (screenshots), with no console error', async () => {
    for (const locale of ['en', 'fr-CA'] as const) {
      const session = await createSession(api, org.apiKey, {
        customer_id: scenario.customers.quebec.id,
        locale,
      });
      const { page, problems } = await watchedPage();
      await page.goto(onServer(session.url));
      expect(await page.getAttribute('html', 'lang')).toBe(locale);
      // the stylesheet applied (CSP default-src 'self' lets it in): cards have a border and a background
      const border = await page.evaluate(
        "getComputedStyle(document.querySelector('section.card')).borderTopStyle",
      );
      expect(border).toBe('solid');
      const shot = await page.screenshot({ path: join(SCREENSHOTS, `portal-${locale}.png`), fullPage: true });
      expect(shot.length).toBeGreaterThan(20_000);
      const invoicePage = await watchedPage();
      await invoicePage.page.goto(
        onServer(`${session.url.replace(/\?.*$/, '')}/invoices/${scenario.invoices.POSTED.id}`),
      );
      await invoicePage.page.screenshot({ path: join(SCREENSHOTS, `invoice-${locale}.png`), fullPage: true });
      expect(problems).toEqual([]);
      expect(invoicePage.problems).toEqual([]);
      await page.close();
      await invoicePage.page.close();
    }
  });
});
