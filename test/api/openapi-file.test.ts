import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatOpenApiFile, OPENAPI_FILE, OPENAPI_FILE_BASE_URL } from '../../bin/openapi.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { PROJECT_ROOT } from '../helpers/processes.js';

/**
 * openapi.json at the repository root is for client generators: it must be the document the api
 * serves (`npm run openapi` rewrites it), and a client generated from it must type-check against
 * real calls.
 */
describe('openapi.json', () => {
  let api: TestApi;
  let served: unknown;

  beforeAll(async () => {
    api = await startTestApi();
    const org = await createTestOrg(api.platform.db);
    const response = await api.request({
      path: '/openapi.json',
      key: org.apiKey,
      headers: { host: new URL(OPENAPI_FILE_BASE_URL).host },
    });
    expect(response.statusCode).toBe(200);
    served = response.json();
  });
  afterAll(() => api?.close());

  it('is the document the api serves (run `npm run openapi` after changing a route)', async () => {
    const committed = await readFile(OPENAPI_FILE, 'utf8');
    expect(committed).toBe(formatOpenApiFile(served));
  });

  it('generates a TypeScript client (openapi-typescript + openapi-fetch) that type-checks real calls', async () => {
    const directory = path.join(PROJECT_ROOT, '.cache', 'openapi-client');
    await rm(directory, { recursive: true, force: true });
    await mkdir(directory, { recursive: true });
    const types = astToString(await openapiTS(JSON.parse(await readFile(OPENAPI_FILE, 'utf8'))));
    await writeFile(path.join(directory, 'schema.d.ts'), types);
    await writeFile(
      path.join(directory, 'client.ts'),
      `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const client = createClient<paths>({
  baseUrl: '${OPENAPI_FILE_BASE_URL}/api/public/v1',
  headers: { Authorization: 'Bearer sk_test_example' },
});

export async function calls(): Promise<string[]> {
  const customer = await client.GET('/customers/{customer_id}', { params: { path: { customer_id: 1 } } });
  const email: string | null | undefined = customer.data?.data.email;
  const page = await client.GET('/invoices', { params: { query: { status: 'PAID', limit: 10 } } });
  const totals: string[] = (page.data?.data ?? []).map((invoice) => invoice.total);
  const event = await client.POST('/usage/events', {
    params: { header: { 'idempotency-key': 'order-1' } },
    body: { subscription_item_id: 1, quantity: 2.5 },
  });
  const id: string | undefined = event.data?.data.id;
  // @ts-expect-error a status outside the enum is refused by the types
  await client.GET('/invoices', { params: { query: { status: 'SETTLED' } } });
  return [email ?? '', ...totals, id ?? ''];
}
`,
    );
    const tsc = path.join(PROJECT_ROOT, 'node_modules/.bin/tsc');
    const result = await promisify(execFile)(
      tsc,
      [
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        path.join(directory, 'client.ts'),
      ],
      { cwd: PROJECT_ROOT },
    ).catch((error: { stdout: string; code: number }) => error);
    expect(result.stdout).toBe('');
  }, 60_000);

  it('is browsable at GET /docs without a key, every asset served by the api itself', async () => {
    const page = await api.app.inject({ url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).not.toMatch(/https:|swagger\.io/);
    // every script, style and image the page names is served here, and none comes from elsewhere
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(([, url]) => url!);
    expect(assets.length).toBeGreaterThan(3);
    for (const asset of assets) {
      expect(asset, asset).not.toMatch(/^(https?:)?\/\//);
      const served = await api.app.inject({ url: new URL(asset, 'http://x/docs/').pathname });
      expect(served.statusCode, asset).toBe(200);
    }
    // the document it shows is the one /openapi.json serves
    const shown = await api.app.inject({
      url: '/docs/json',
      headers: { host: new URL(OPENAPI_FILE_BASE_URL).host },
    });
    expect(shown.json()).toEqual(served);
  });
});
