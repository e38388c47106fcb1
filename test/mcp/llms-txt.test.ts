import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_TOOLS } from '../../libs/mcp/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type ListeningApi, startListeningApi } from './mcp-server.js';

let api: ListeningApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startListeningApi();
  org = await createTestOrg(api.platform.db);
});
afterAll(() => api?.close());

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

describe('llms.txt', () => {
  it('is served without a key under the base path and at the site root, identically', async () => {
    const [underBase, atRoot] = await Promise.all([
      fetch(`${api.origin}${BASE_PATH}/llms.txt`),
      fetch(`${api.origin}/llms.txt`),
    ]);
    for (const response of [underBase, atRoot]) {
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(response.headers.get('x-ratelimit-limit')).toBeNull();
    }
    expect(await underBase.text()).toBe(await atRoot.text());
  });

  it('under the base path, is counted with the rate-limit headers when asked with a key, like /meta', async () => {
    const limited = await createTestOrg(api.platform.db, { plan: 'beta', requestsPerHour: 5 });
    const withKey = () =>
      fetch(`${api.origin}${BASE_PATH}/llms.txt`, { headers: { authorization: `Bearer ${limited.apiKey}` } });
    const [first, second] = [await withKey(), await withKey()];
    for (const response of [first, second]) {
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBe('5');
      // a shared cache must not hand one organization's counters to another caller
      expect(response.headers.get('cache-control')).toBe('private, max-age=300');
      expect(response.headers.get('vary')).toMatch(/authorization/i);
    }
    expect([first, second].map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['4', '3']);
    expect(await first.text()).toBe(await (await fetch(`${api.origin}/llms.txt`)).text());

    const anonymous = await fetch(`${api.origin}${BASE_PATH}/llms.txt`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get('x-ratelimit-limit')).toBeNull();
    expect(anonymous.headers.get('cache-control')).toBe('public, max-age=300');
    expect(anonymous.headers.get('vary')).toMatch(/authorization/i);

    const wrongKey = await fetch(`${api.origin}${BASE_PATH}/llms.txt`, {
      headers: { authorization: 'Bearer sk_test_not_a_key' },
    });
    expect(wrongKey.status).toBe(401);
  });

  it('at the site root, checks and counts no key: a wrong one still gets the public document', async () => {
    const limited = await createTestOrg(api.platform.db, { plan: 'beta', requestsPerHour: 5 });
    for (const authorization of [`Bearer ${limited.apiKey}`, 'Bearer sk_test_not_a_key']) {
      const response = await fetch(`${api.origin}/llms.txt`, { headers: { authorization } });
      expect(response.status, authorization).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBeNull();
      expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    }
    const counted = await fetch(`${api.origin}${BASE_PATH}/llms.txt`, {
      headers: { authorization: `Bearer ${limited.apiKey}` },
    });
    expect(counted.headers.get('x-ratelimit-remaining')).toBe('4');
  });

  it('follows the llms.txt convention: H1, summary blockquote, then H2 sections of links', async () => {
    const text = await (await fetch(`${api.origin}/llms.txt`)).text();
    const lines = text.split('\n');
    expect(lines[0]).toBe('# Billing Public API');
    expect(lines[2]).toMatch(/^> \S/);
    expect(text).toMatch(/^## Docs$/m);
    const links = [...text.matchAll(/^- \[[^\]]+\]\(([^)]+)\)/gm)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(5);
    for (const link of links) expect(link).toMatch(new RegExp(`^${api.origin}${BASE_PATH}/`));
  });

  it('lists every operation of the OpenAPI document with its method, path and summary', async () => {
    const [text, document] = await Promise.all([
      fetch(`${api.origin}/llms.txt`).then((r) => r.text()),
      api.request({ path: '/openapi.json', key: org.apiKey }).then((r) => r.json()),
    ]);
    const paths = Object.entries(document.paths as Record<string, Record<string, { summary?: string }>>);
    expect(paths.length).toBeGreaterThan(3);
    for (const [path, item] of paths) {
      expect(text, path).toContain(path);
      for (const method of METHODS.filter((m) => item[m])) {
        const line = text.split('\n').find((l) => l.startsWith(`- [${method.toUpperCase()} ${path}]`));
        expect(line, `${method} ${path}`).toBeDefined();
        if (item[method]!.summary) expect(line).toContain(item[method]!.summary);
      }
    }
    expect(text).toContain('/mcp');
    expect(text).toContain('/openapi.json');
    expect(text).toContain('/meta');
  });

  it('describes the MCP endpoint with every tool and its arguments', async () => {
    const text = await (await fetch(`${api.origin}/llms.txt`)).text();
    for (const tool of MCP_TOOLS) expect(text).toContain(`[${tool.name}]`);
    expect(text).toContain('[list_invoices](');
    expect(text).toContain('({status?, customer_id?, limit?})');
    expect(text).toContain('({customer_id})');
    expect(text).toContain('({country, state_province?, amount?, currency?, date?})');
  });
});

describe('/meta points at the MCP endpoint and llms.txt', () => {
  it('mcp_url answers MCP and llms_url answers the markdown', async () => {
    const { data: meta } = (await (await fetch(`${api.origin}${BASE_PATH}/meta`)).json()) as {
      data: { mcp_url: string; llms_url: string; openapi_url: string };
    };
    expect(meta.openapi_url).toBe(`${api.origin}${BASE_PATH}/openapi.json`);
    expect(meta.mcp_url).toBe(`${api.origin}${BASE_PATH}/mcp`);
    expect(meta.llms_url).toBe(`${api.origin}${BASE_PATH}/llms.txt`);
    const llms = await fetch(meta.llms_url);
    expect(llms.status).toBe(200);
    expect(await llms.text()).toMatch(/^# /);
    const ping = await fetch(meta.mcp_url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${org.apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(await ping.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });
});
