import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { launchChromium, type TestBrowser, watchedPage } from '../helpers/browser.js';

/**
 * GET /docs in a real browser: the interactive reference renders every operation of the live
 * document, from assets the api serves itself (no request leaves it), without a console error.
 */
describe('API reference page in Chromium', () => {
  let api: TestApi;
  let browser: TestBrowser;
  let origin: string;

  beforeAll(async () => {
    api = await startTestApi();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it('renders every operation of the document, every request to the api itself', async () => {
    const document = (await api.app.inject({ url: '/docs/json' })).json() as {
      paths: Record<string, Record<string, unknown>>;
      webhooks?: Record<string, Record<string, unknown>>;
    };
    // the routes, and the webhook deliveries the document describes (OpenAPI 3.1 `webhooks`)
    const operations = [...Object.values(document.paths), ...Object.values(document.webhooks ?? {})].flatMap(
      (item) =>
        Object.keys(item).filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method)),
    );
    expect(operations.length).toBeGreaterThan(20);
    const { page, problems, requested } = await watchedPage(browser.context);
    await page.goto(`${origin}/docs`);
    await page.waitForSelector('.opblock', { timeout: 20_000 });
    expect(await page.locator('.opblock').count()).toBe(operations.length);
    expect(await page.locator('.info .title').innerText()).toContain('Billing Public API');
    // an operation opens, with its responses
    await page.locator('.opblock-summary').first().click();
    await page.waitForSelector('.responses-wrapper', { timeout: 10_000 });
    expect(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual([]);
    expect(problems).toEqual([]);
  }, 60_000);
});
