import { describe, expect, expectTypeOf, it } from 'vitest';
import { createBillingClient } from './api-client.js';
import { BillingApiError } from './errors.js';

/** A client whose requests are answered by `answer` (the real service: test/client/api-client.test.ts). */
function clientAnswering(answer: (request: Request) => Response) {
  const requests: Request[] = [];
  const client = createBillingClient({
    baseUrl: 'http://billing.test/api/public/v1',
    apiKey: 'sk_test_unit',
    fetch: async (request) => {
      requests.push(request);
      return answer(request);
    },
  });
  return { client, requests };
}

describe('createBillingClient', () => {
  it('sends the key and typed parameters, and answers the success body', async () => {
    const { client, requests } = clientAnswering(() =>
      Response.json({ data: { id: 7, object: 'customer', name: 'Acme' } }),
    );
    const { data } = await client.GET('/customers/{customer_id}', { params: { path: { customer_id: 7 } } });
    expect(data.data.name).toBe('Acme');
    expectTypeOf(data.data.name).toEqualTypeOf<string>();
    expect(requests[0]!.url).toBe('http://billing.test/api/public/v1/customers/7');
    expect(requests[0]!.headers.get('authorization')).toBe('Bearer sk_test_unit');
  });

  it("sends each method as its own HTTP verb, the caller's headers with every request, and answers the Response", async () => {
    const requests: Request[] = [];
    const client = createBillingClient({
      baseUrl: 'http://billing.test/api/public/v1',
      apiKey: 'sk_test_unit',
      headers: { 'x-tenant': 'acme' },
      fetch: async (request) => {
        requests.push(request);
        return request.method === 'DELETE'
          ? new Response(null, { status: 204, headers: { 'x-request-id': 'r-delete' } })
          : Response.json({ data: {} }, { headers: { 'x-request-id': `r-${request.method}` } });
      },
    });
    const answers = [
      await client.GET('/alerts/{alert_id}', {
        params: { path: { alert_id: '0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f01' } },
      }),
      await client.POST('/customers', { body: { name: 'A', email: 'a@example.com' } }),
      await client.PUT('/customers/{customer_id}/credit-top-up', {
        params: { path: { customer_id: 2 } },
        body: { enabled: true, threshold: 10, target: 50 },
      }),
      await client.PATCH('/webhook-endpoints/{endpoint_id}', {
        params: { path: { endpoint_id: '0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f03' } },
        body: { status: 'DISABLED' },
      }),
      await client.DELETE('/alerts/{alert_id}', {
        params: { path: { alert_id: '0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f04' } },
      }),
    ];
    expect(requests.map((r) => [r.method, new URL(r.url).pathname])).toEqual([
      ['GET', '/api/public/v1/alerts/0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f01'],
      ['POST', '/api/public/v1/customers'],
      ['PUT', '/api/public/v1/customers/2/credit-top-up'],
      ['PATCH', '/api/public/v1/webhook-endpoints/0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f03'],
      ['DELETE', '/api/public/v1/alerts/0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f04'],
    ]);
    for (const request of requests) {
      expect(request.headers.get('x-tenant')).toBe('acme');
      expect(request.headers.get('authorization')).toBe('Bearer sk_test_unit');
    }
    expect(answers.map((a) => a.response.headers.get('x-request-id'))).toEqual([
      'r-GET',
      'r-POST',
      'r-PUT',
      'r-PATCH',
      'r-delete',
    ]);
    expect(answers[4]!.response.status).toBe(204);
  });

  it("sends the API key over a caller's Authorization header: the key it was given is the one used", async () => {
    const requests: Request[] = [];
    const client = createBillingClient({
      baseUrl: 'http://billing.test/api/public/v1',
      apiKey: 'sk_test_unit',
      headers: { Authorization: 'Bearer sk_live_other' },
      fetch: async (request) => {
        requests.push(request);
        return Response.json({ data: {} });
      },
    });
    await client.GET('/meta');
    expect(requests[0]!.headers.get('authorization')).toBe('Bearer sk_test_unit');
  });

  it('throws every answer that is not 2xx as one BillingApiError with the error body', async () => {
    const { client } = clientAnswering(() =>
      Response.json(
        {
          error_code: 'VALIDATION_ERROR',
          detail: 'The request is invalid.',
          request_id: '0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f11',
          details: [{ field: 'email', message: 'Invalid e-mail.', code: 'invalid_format' }],
        },
        { status: 422 },
      ),
    );
    const failure = await client.POST('/customers', { body: { name: 'A', email: 'nope' } }).catch((e) => e);
    expect(failure).toBeInstanceOf(BillingApiError);
    expect(failure).toMatchObject({
      status: 422,
      error_code: 'VALIDATION_ERROR',
      detail: 'The request is invalid.',
      request_id: '0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f11',
      details: [{ field: 'email', code: 'invalid_format' }],
    });
    expect(failure.message).toBe(
      '422 VALIDATION_ERROR: The request is invalid. (request 0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f11)',
    );
  });

  it('reads Retry-After into the error, and keeps a body that is not an error body', async () => {
    const { client } = clientAnswering(
      () =>
        new Response('<html>502 Bad Gateway</html>', {
          status: 503,
          headers: { 'retry-after': '2', 'x-request-id': 'abc' },
        }),
    );
    const failure = (await client.GET('/meta').catch((e) => e)) as BillingApiError;
    expect(failure).toMatchObject({
      status: 503,
      error_code: 'UNEXPECTED_RESPONSE',
      detail: '<html>502 Bad Gateway</html>',
      request_id: 'abc',
      retryAfterMs: 2000,
    });
  });

  it('keeps the first 200 characters of a long body, and needs both error_code and detail for an error body', async () => {
    const page = `<html>${'x'.repeat(1000)}</html>`;
    const { client } = clientAnswering((request) =>
      request.url.endsWith('/meta')
        ? new Response(page, { status: 502 })
        : Response.json({ error_code: 'RATE_LIMITED' }, { status: 429 }),
    );
    const long = (await client.GET('/meta').catch((e) => e)) as BillingApiError;
    expect(long).toMatchObject({
      status: 502,
      error_code: 'UNEXPECTED_RESPONSE',
      detail: page.slice(0, 200),
    });
    const partial = (await client.GET('/invoices').catch((e) => e)) as BillingApiError;
    expect(partial).toMatchObject({
      status: 429,
      error_code: 'UNEXPECTED_RESPONSE',
      detail: '{"error_code":"RATE_LIMITED"}',
    });
  });

  it('reads Retry-After into the error beside a real error body (a 429 of the hourly limit)', async () => {
    const { client } = clientAnswering(() =>
      Response.json(
        { error_code: 'RATE_LIMITED', detail: 'Too many requests.', request_id: 'req-429' },
        { status: 429, headers: { 'retry-after': '120' } },
      ),
    );
    const failure = (await client.GET('/invoices').catch((e) => e)) as BillingApiError;
    expect(failure).toMatchObject({
      status: 429,
      error_code: 'RATE_LIMITED',
      detail: 'Too many requests.',
      request_id: 'req-429',
      retryAfterMs: 120_000,
    });
  });

  it('names the status of an error answer without a body, and wants error_code as well as detail', async () => {
    const { client } = clientAnswering((request) =>
      request.url.endsWith('/meta')
        ? new Response(null, { status: 502, headers: { 'x-request-id': 'req-502' } })
        : Response.json({ detail: 'Not found.' }, { status: 404 }),
    );
    const empty = (await client.GET('/meta').catch((e) => e)) as BillingApiError;
    expect(empty).toMatchObject({
      status: 502,
      error_code: 'UNEXPECTED_RESPONSE',
      detail: 'HTTP 502 without an error body',
      request_id: 'req-502',
      retryAfterMs: undefined,
    });
    const detailOnly = (await client.GET('/invoices').catch((e) => e)) as BillingApiError;
    expect(detailOnly).toMatchObject({
      status: 404,
      error_code: 'UNEXPECTED_RESPONSE',
      detail: '{"detail":"Not found."}',
    });
  });

  it('throws a BillingApiError, not a TypeError, for an error answer whose JSON body is null or a list', async () => {
    const { client } = clientAnswering((request) =>
      request.url.endsWith('/meta')
        ? new Response('null', { status: 502, headers: { 'content-type': 'application/json' } })
        : Response.json([1, 2], { status: 500 }),
    );
    const nullBody = (await client.GET('/meta').catch((e) => e)) as BillingApiError;
    expect(nullBody).toBeInstanceOf(BillingApiError);
    expect(nullBody).toMatchObject({ status: 502, error_code: 'UNEXPECTED_RESPONSE', detail: 'null' });
    const list = (await client.GET('/invoices').catch((e) => e)) as BillingApiError;
    expect(list).toBeInstanceOf(BillingApiError);
    expect(list).toMatchObject({ status: 500, error_code: 'UNEXPECTED_RESPONSE', detail: '[1,2]' });
  });

  it('throws a 3xx answer as well (only 2xx is success), and an error answer of Content-Length 0', async () => {
    const { client } = clientAnswering((request) =>
      request.url.endsWith('/meta')
        ? new Response(null, { status: 304 })
        : new Response(null, { status: 503, headers: { 'content-length': '0', 'retry-after': '3' } }),
    );
    const notModified = (await client.GET('/meta').catch((e) => e)) as BillingApiError;
    expect(notModified).toBeInstanceOf(BillingApiError);
    expect(notModified).toMatchObject({ status: 304, error_code: 'UNEXPECTED_RESPONSE' });
    // openapi-fetch hands over no body at all (undefined) when Content-Length is 0
    const empty = (await client.GET('/invoices').catch((e) => e)) as BillingApiError;
    expect(empty).toBeInstanceOf(BillingApiError);
    expect(empty).toMatchObject({
      status: 503,
      error_code: 'UNEXPECTED_RESPONSE',
      detail: 'HTTP 503 without an error body',
      retryAfterMs: 3000,
    });
  });

  it('refuses, at compile time, paths, parameters and bodies the API does not have', () => {
    const { client } = clientAnswering(() => Response.json({}));
    const calls = () => {
      // @ts-expect-error no such path
      void client.GET('/customer');
      // @ts-expect-error customer_id is required
      void client.GET('/customers/{customer_id}', { params: { path: {} } });
      // @ts-expect-error a status outside the enum
      void client.GET('/invoices', { params: { query: { status: 'SETTLED' } } });
      void client.POST('/usage/events/batch', {
        // @ts-expect-error quantity is a number
        body: { events: [{ subscription_item_id: 1, quantity: '1', idempotency_key: 'k' }] },
      });
    };
    expect(calls).toBeTypeOf('function');
  });
});
