import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BillingApiError, UsageEventValidationError } from '../errors.js';
import { prepareUsageEvent, type ReportedUsageEvent } from './event.js';
import {
  type CloseResult,
  type UsageRejection,
  UsageReporter,
  type UsageReporterOptions,
} from './reporter.js';

/**
 * The reporter's states and policies against a scripted transport (the `fetch` option): each
 * request's events are recorded and answered as `answer` decides. The exactly-once behaviour
 * against the real service, its faults included, is proven under test/client/.
 */

interface Request {
  at: number;
  body: string;
  events: ReportedUsageEvent[];
  headers: Record<string, string>;
}

type Answer = (request: Request, index: number) => Response | Promise<Response>;

const recorded = (events: ReportedUsageEvent[]) =>
  Response.json({
    data: events.map((event) => ({ status: 201, data: { id: 'x', object: 'usage_event', ...event } })),
  });
const errorBody = (status: number, code: string, headers: Record<string, string> = {}) =>
  Response.json(
    { error_code: code, detail: `${code} detail`, request_id: '00000000-0000-4000-8000-000000000000' },
    { status, headers },
  );

const reporters: UsageReporter[] = [];
afterEach(async () => {
  for (const reporter of reporters.splice(0)) await reporter.close({ timeoutMs: 10 });
});

function scripted(
  answer: Answer = (request) => recorded(request.events),
  options: Partial<UsageReporterOptions> = {},
) {
  const requests: Request[] = [];
  const rejections: UsageRejection[] = [];
  const reporter = new UsageReporter({
    baseUrl: 'http://billing.test/api/public/v1/',
    apiKey: 'sk_test_unit',
    flushIntervalMs: 20,
    retry: { baseDelayMs: 10, maxDelayMs: 40 },
    onRejected: (rejection) => rejections.push(rejection),
    fetch: async (url, init) => {
      expect(url).toBe('http://billing.test/api/public/v1/usage/events/batch');
      const body = String(init.body);
      const request = {
        at: Date.now(),
        body,
        events: JSON.parse(body).events,
        headers: init.headers as Record<string, string>,
      };
      requests.push(request);
      return answer(request, requests.length - 1);
    },
    ...options,
  } as UsageReporterOptions);
  reporters.push(reporter);
  return { reporter, requests, rejections };
}

const event = (n: number, item = 1) => ({
  subscription_item_id: item,
  quantity: 1,
  idempotency_key: `k-${n}`,
});
const keysOf = (requests: Request[]) => requests.flatMap((r) => r.events.map((e) => e.idempotency_key));

describe('UsageReporter', () => {
  it('sends full batches at once and the rest after the flush interval, each key once', async () => {
    const { reporter, requests } = scripted(undefined, { flushIntervalMs: 200 });
    const reportedAt = Date.now();
    for (let n = 0; n < 2500; n++) void reporter.report(event(n));
    // the full batches went without waiting for any timer
    expect(requests.map((r) => r.events.length)).toEqual([1000, 1000]);
    await sleep(300);
    expect(requests.map((r) => r.events.length)).toEqual([1000, 1000, 500]);
    expect(requests[2]!.at - reportedAt).toBeGreaterThanOrEqual(195);
    expect(keysOf(requests)).toEqual(Array.from({ length: 2500 }, (_, n) => `k-${n}`));
    expect(requests[0]!.headers.authorization).toBe('Bearer sk_test_unit');
    expect(reporter.stats).toMatchObject({ reported: 2500, sent: 2500, buffered: 0, retried: 0 });
  });

  it('sends a batch the moment it holds maxBatchEvents events or maxBatchBytes bytes, not one later', async () => {
    const byCount = scripted(undefined, { flushIntervalMs: 60_000, maxBatchEvents: 3 });
    for (let n = 0; n < 3; n++) void byCount.reporter.report(event(n));
    expect(byCount.requests.map((r) => r.events.length)).toEqual([3]);

    const timestamp = '2026-11-20T10:00:00.000Z';
    const fixed = (n: number) => ({ ...event(n), timestamp });
    const bytes = prepareUsageEvent(fixed(0), 0, () => '').bytes;
    const byBytes = scripted(undefined, { flushIntervalMs: 60_000, maxBatchBytes: 2 * bytes });
    void byBytes.reporter.report(fixed(0));
    void byBytes.reporter.report(fixed(1));
    expect(byBytes.requests.map((r) => r.events.length)).toEqual([2]);
  });

  it('sends a full batch waiting behind maxConcurrentRequests as soon as a request ends', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { reporter, requests } = scripted(
      async (request) => {
        await gate;
        return recorded(request.events);
      },
      { flushIntervalMs: 60_000, maxBatchEvents: 3, maxConcurrentRequests: 1 },
    );
    for (let n = 0; n < 6; n++) void reporter.report(event(n));
    expect(requests).toHaveLength(1);
    release();
    await sleep(20);
    expect(requests.map((r) => r.events.length)).toEqual([3, 3]);
  });

  it('keeps a batch under maxBatchBytes', async () => {
    const { reporter, requests } = scripted(undefined, { maxBatchBytes: 1000 });
    for (let n = 0; n < 30; n++) void reporter.report(event(n));
    await reporter.flush();
    expect(requests.length).toBeGreaterThan(2);
    for (const request of requests) expect(Buffer.byteLength(request.body)).toBeLessThan(1000 + 20);
    expect(keysOf(requests)).toHaveLength(30);
  });

  it('posts to the batch path under a base URL given with several trailing slashes', async () => {
    const urls: string[] = [];
    const { reporter } = scripted(undefined, {
      baseUrl: 'http://billing.test/api/public/v1//',
      fetch: async (url, init) => {
        urls.push(url);
        return recorded(JSON.parse(String(init.body)).events);
      },
    });
    void reporter.report(event(1));
    await reporter.flush();
    expect(urls).toEqual(['http://billing.test/api/public/v1/usage/events/batch']);
  });

  it('POSTs JSON with its user agent, the key as a bearer token', async () => {
    const inits: RequestInit[] = [];
    const { reporter } = scripted(undefined, {
      fetch: async (_url, init) => {
        inits.push(init);
        return recorded(JSON.parse(String(init.body)).events);
      },
    });
    void reporter.report(event(1));
    await reporter.flush();
    expect(inits).toHaveLength(1);
    expect(inits[0]!.method).toBe('POST');
    expect(inits[0]!.headers).toMatchObject({
      authorization: 'Bearer sk_test_unit',
      'content-type': 'application/json',
      'user-agent': expect.stringMatching(/^billing-service-client-node\//),
    });
    expect(inits[0]!.signal).toBeInstanceOf(AbortSignal);
  });

  it("refuses options that are not positive integers, and batches above the service's 1,000 events", () => {
    const options = { baseUrl: 'http://billing.test', apiKey: 'sk_test_unit' };
    for (const bad of [
      { maxBatchEvents: 1001 },
      { maxBatchEvents: 0 },
      { maxBufferedEvents: 0 },
      { maxBufferedEvents: 1.5 },
      { flushIntervalMs: Number.NaN },
      { requestTimeoutMs: -1 },
      { maxConcurrentRequests: Number.POSITIVE_INFINITY },
      { retry: { baseDelayMs: 0 } },
      { retry: { maxDelayMs: 0.5 } },
    ]) {
      expect(() => new UsageReporter({ ...options, ...bad }), JSON.stringify(bad)).toThrow(RangeError);
    }
    expect(new UsageReporter({ ...options, maxBatchEvents: 1000, maxBufferedEvents: 1 })).toBeDefined();
  });

  it('gives an event without key or timestamp a UUIDv7 key of its own and the moment of its report', async () => {
    const { reporter, requests } = scripted();
    const before = Date.now();
    for (let n = 0; n < 3; n++) void reporter.report({ subscription_item_id: 1, quantity: 1 });
    const after = Date.now();
    await reporter.flush();
    const events = requests.flatMap((r) => r.events);
    expect(new Set(events.map((e) => e.idempotency_key)).size).toBe(3);
    for (const e of events) {
      expect(e.idempotency_key).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      const keyMs = Number.parseInt(e.idempotency_key.replace(/-/g, '').slice(0, 12), 16);
      const at = Date.parse(e.timestamp);
      for (const ms of [keyMs, at]) {
        expect(ms).toBeGreaterThanOrEqual(before);
        expect(ms).toBeLessThanOrEqual(after);
      }
    }
  });

  it('throws an invalid event synchronously, and buffers nothing of it', () => {
    const { reporter } = scripted();
    expect(() => reporter.report({ quantity: 1 } as never)).toThrow(UsageEventValidationError);
    expect(() => reporter.report({ subscription_item_id: 1, quantity: 0 })).toThrow(/quantity/);
    expect(() =>
      reporter.report({ subscription_item_id: 1, quantity: 1, idempotency_key: 'k'.repeat(256) }),
    ).toThrow(/idempotency_key/);
    expect(reporter.stats).toMatchObject({ reported: 0, buffered: 0 });
  });

  it('retries a 503 no earlier than Retry-After, with the same bytes (keys and timestamps fixed at report)', async () => {
    const { reporter, requests } = scripted((request, index) =>
      index === 0 ? errorBody(503, 'SERVICE_UNAVAILABLE', { 'Retry-After': '1' }) : recorded(request.events),
    );
    const retried: [number, string][] = [];
    (reporter as unknown as { options: UsageReporterOptions }).options.metrics = {
      retried: (n, reason) => retried.push([n, reason]),
    };
    for (let n = 0; n < 3; n++) void reporter.report({ subscription_item_id: 1, quantity: 1 });
    await reporter.flush();
    expect(requests).toHaveLength(2);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(requests[1]!.body).toBe(requests[0]!.body);
    expect(retried).toEqual([[3, 'unavailable']]);
    expect(reporter.stats).toMatchObject({ sent: 3, retried: 3 });
  });

  it('retries network errors, timeouts, 429, 500 and an answer it cannot read, backing off between them', async () => {
    const answers: Answer[] = [
      () => {
        throw new TypeError('fetch failed');
      },
      () => errorBody(429, 'RATE_LIMITED', { 'Retry-After': '0' }),
      () => errorBody(500, 'INTERNAL_SERVER_ERROR'),
      () => new Response('<html>bad gateway</html>', { status: 502 }),
      () => Response.json({ data: [] }),
      (request) => recorded(request.events),
    ];
    const reasons: string[] = [];
    const { reporter, requests, rejections } = scripted((request, index) => answers[index]!(request, index), {
      metrics: { retried: (_, reason) => reasons.push(reason) },
    });
    void reporter.report(event(1));
    await reporter.flush();
    expect(requests).toHaveLength(6);
    expect(reasons).toEqual(['network', 'rate_limited', 'server_error', 'server_error', 'bad_response']);
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
    const gaps = requests.slice(1).map((r, i) => r.at - requests[i]!.at);
    // after the 429, Retry-After: 0 allows an immediate retry; every other failure backs off
    gaps.splice(1, 1);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(4);
    expect(rejections).toEqual([]);
    expect(reporter.stats).toMatchObject({ sent: 1, retried: 5 });
  });

  it('retries a batch answered with more results than it had events, as an answer it cannot match', async () => {
    const reasons: string[] = [];
    const { reporter, requests } = scripted(
      (request, index) =>
        index === 0
          ? Response.json({
              data: [...request.events, event(99)].map((e) => ({ status: 201, data: e })),
            })
          : recorded(request.events),
      { metrics: { retried: (_, reason) => reasons.push(reason) } },
    );
    void reporter.report(event(1));
    await reporter.flush();
    expect(keysOf(requests)).toEqual(['k-1', 'k-1']);
    expect(reasons).toEqual(['bad_response']);
    expect(reporter.stats).toMatchObject({ sent: 1, retried: 1 });
  });

  it('retries a batch answered 202 or 204: a success without results leaves its events unknown', async () => {
    const reasons: string[] = [];
    const { reporter, requests, rejections } = scripted(
      (request, index) =>
        index === 0
          ? new Response(null, { status: 204 })
          : index === 1
            ? Response.json({ data: request.events.map((e) => ({ status: 201, data: e })) }, { status: 202 })
            : recorded(request.events),
      { metrics: { retried: (_, reason) => reasons.push(reason) } },
    );
    void reporter.report(event(1));
    await reporter.flush();
    expect(keysOf(requests)).toEqual(['k-1', 'k-1', 'k-1']);
    expect(reasons).toEqual(['bad_response', 'bad_response']);
    expect(rejections).toEqual([]);
    expect(reporter.stats).toMatchObject({ sent: 1, retried: 2 });
  });

  it('names why a batch is retried: 408 a timeout, 429 rate-limited, 503 unavailable, any other 5xx a server error', async () => {
    const statuses = [408, 429, 503, 504, 501];
    const reasons: string[] = [];
    const { reporter, requests } = scripted(
      (request, index) =>
        index < statuses.length
          ? errorBody(statuses[index]!, 'FAILED', { 'Retry-After': '0' })
          : recorded(request.events),
      { metrics: { retried: (_, reason) => reasons.push(reason) } },
    );
    void reporter.report(event(1));
    await reporter.flush();
    expect(requests).toHaveLength(6);
    expect(reasons).toEqual(['timeout', 'rate_limited', 'unavailable', 'server_error', 'server_error']);
  });

  it("names an event's own 429 result rate-limited, and a 503 result unavailable", async () => {
    const reasons: string[] = [];
    const { reporter } = scripted(
      (request, index) =>
        Response.json({
          data: request.events.map((e) =>
            index < 2
              ? {
                  status: index === 0 ? 429 : 503,
                  error: { error_code: 'LATER', detail: 'later', request_id: 'r' },
                }
              : { status: 201, data: e },
          ),
        }),
      { metrics: { retried: (_, reason) => reasons.push(reason) } },
    );
    void reporter.report(event(1));
    await reporter.flush();
    expect(reasons).toEqual(['rate_limited', 'unavailable']);
  });

  it('names a retry by the first retryable result, not by an event of the batch refused before it', async () => {
    const reasons: string[] = [];
    const { reporter, requests, rejections } = scripted(
      (request, index) =>
        Response.json({
          data: request.events.map((e) =>
            index === 0 && e.idempotency_key !== 'k-3'
              ? {
                  status: e.idempotency_key === 'k-1' ? 404 : 429,
                  error: {
                    error_code: e.idempotency_key === 'k-1' ? 'NOT_FOUND' : 'RATE_LIMITED',
                    detail: 'no',
                    request_id: 'r',
                  },
                }
              : { status: 201, data: e },
          ),
        }),
      { metrics: { retried: (_, reason) => reasons.push(reason) } },
    );
    for (let n = 1; n <= 3; n++) void reporter.report(event(n));
    await reporter.flush();
    expect(reasons).toEqual(['rate_limited']);
    expect(rejections.map((r) => [r.event.idempotency_key, r.error.error_code])).toEqual([
      ['k-1', 'NOT_FOUND'],
    ]);
    expect(requests.map((r) => r.events.map((e) => e.idempotency_key))).toEqual([
      ['k-1', 'k-2', 'k-3'],
      ['k-2'],
    ]);
  });

  it('retries an event whose own result is 503 or 429 with its key, and rejects none of them', async () => {
    const { reporter, requests, rejections } = scripted((request, index) =>
      Response.json({
        data: request.events.map((e) =>
          index === 0 && e.idempotency_key !== 'k-1'
            ? {
                status: e.idempotency_key === 'k-2' ? 503 : 429,
                error: { error_code: 'SERVICE_UNAVAILABLE', detail: 'later', request_id: 'r' },
              }
            : { status: 201, data: e },
        ),
      }),
    );
    for (let n = 1; n <= 3; n++) void reporter.report(event(n));
    await reporter.flush();
    expect(requests.map((r) => r.events.map((e) => e.idempotency_key))).toEqual([
      ['k-1', 'k-2', 'k-3'],
      ['k-2', 'k-3'],
    ]);
    expect(rejections).toEqual([]);
    expect(reporter.stats).toMatchObject({ sent: 3, retried: 2, rejected: 0 });
  });

  it('starts the backoff over after a request succeeds', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    try {
      // fail, fail, fail, succeed; then fail, succeed: the last wait is the first step's again
      const fails = new Set([0, 1, 2, 4]);
      const { reporter, requests } = scripted(
        (request, index) =>
          fails.has(index) ? errorBody(500, 'INTERNAL_SERVER_ERROR') : recorded(request.events),
        { retry: { baseDelayMs: 100, maxDelayMs: 10_000 } },
      );
      void reporter.report(event(1));
      await reporter.flush();
      expect(requests).toHaveLength(4);
      // 50, 100 then 200 ms (half the doubling ceiling, random() being 0)
      expect(requests[3]!.at - requests[2]!.at).toBeGreaterThanOrEqual(195);
      void reporter.report(event(2));
      await reporter.flush();
      expect(requests).toHaveLength(6);
      const gap = requests[5]!.at - requests[4]!.at;
      expect(gap).toBeGreaterThanOrEqual(45);
      // not 400 ms: the success before reset the count of consecutive failures
      expect(gap).toBeLessThan(300);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('keeps the longer pause when a later failure asks for a shorter one', async () => {
    const { reporter, requests } = scripted(
      async (request, index) => {
        if (index === 0) return errorBody(429, 'RATE_LIMITED', { 'Retry-After': '1' });
        if (index === 1) {
          await sleep(10);
          return errorBody(500, 'INTERNAL_SERVER_ERROR');
        }
        return recorded(request.events);
      },
      { maxBatchEvents: 1, maxConcurrentRequests: 2 },
    );
    void reporter.report(event(1));
    void reporter.report(event(2));
    await sleep(60);
    // flush() pumps at once: the 500's short backoff must not cut the 429's Retry-After short
    await reporter.flush();
    expect(requests.length).toBeGreaterThan(2);
    for (const request of requests.slice(2)) {
      expect(request.at - requests[0]!.at).toBeGreaterThanOrEqual(1000);
    }
  });

  /**
   * One event whose first request gets `firstAnswer` (which ignores the abort, as our fetch does)
   * under a 50 ms requestTimeoutMs: it is abandoned and the same bytes sent again, as a timeout.
   */
  async function resentAfterTimeout(firstAnswer: () => Promise<Response> | Response) {
    const reasons: string[] = [];
    const { reporter, requests } = scripted(
      (request, index) => (index === 0 ? firstAnswer() : recorded(request.events)),
      { requestTimeoutMs: 50, metrics: { retried: (_, reason) => reasons.push(reason) } },
    );
    void reporter.report(event(1));
    await reporter.flush();
    expect(requests).toHaveLength(2);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(50);
    expect(requests[1]!.body).toBe(requests[0]!.body);
    expect(reasons).toEqual(['timeout']);
    return reporter;
  }

  it('abandons a request without an answer after requestTimeoutMs and sends it again', async () => {
    await resentAfterTimeout(() => new Promise<Response>(() => {}));
  });

  it('abandons a request whose answer never finishes arriving after requestTimeoutMs, and sends it again', async () => {
    // the status line came, the body never ends
    const reporter = await resentAfterTimeout(
      () =>
        new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"data":[')) }), {
          status: 200,
        }),
    );
    expect(reporter.stats).toMatchObject({ sent: 1, retried: 1 });
  });

  it('hands per-event 4xx results to onRejected and never sends them again; the rest are sent', async () => {
    const { reporter, requests, rejections } = scripted((request) =>
      Response.json({
        data: request.events.map((e) =>
          e.subscription_item_id === 404
            ? {
                status: 404,
                error: {
                  error_code: 'NOT_FOUND',
                  detail: 'no item',
                  request_id: '00000000-0000-4000-8000-000000000001',
                },
              }
            : { status: 201, data: e },
        ),
      }),
    );
    void reporter.report(event(1));
    void reporter.report(event(2, 404));
    void reporter.report(event(3));
    await reporter.flush();
    void reporter.report(event(4));
    await reporter.flush();
    expect(keysOf(requests)).toEqual(['k-1', 'k-2', 'k-3', 'k-4']);
    expect(rejections).toHaveLength(1);
    expect(rejections[0]!.event.idempotency_key).toBe('k-2');
    expect(rejections[0]!.error).toBeInstanceOf(BillingApiError);
    expect(rejections[0]!.error).toMatchObject({ status: 404, error_code: 'NOT_FOUND', detail: 'no item' });
    expect(reporter.stats).toMatchObject({ sent: 3, rejected: 1, retried: 0 });
  });

  it('rejects every event of a batch the service refuses as a whole (401), without retrying', async () => {
    const { reporter, requests, rejections } = scripted(() => errorBody(401, 'UNAUTHORIZED'));
    for (let n = 0; n < 3; n++) void reporter.report(event(n));
    await reporter.flush();
    await sleep(50);
    expect(requests).toHaveLength(1);
    expect(rejections.map((r) => [r.event.idempotency_key, r.error.status, r.error.error_code])).toEqual([
      ['k-0', 401, 'UNAUTHORIZED'],
      ['k-1', 401, 'UNAUTHORIZED'],
      ['k-2', 401, 'UNAUTHORIZED'],
    ]);
    expect(rejections[0]!.error.request_id).toBe('00000000-0000-4000-8000-000000000000');
  });

  it('halves its batches when the service answers 413, and rejects a single event too large', async () => {
    const { reporter, requests, rejections } = scripted((request) =>
      request.body.length > 350 ? errorBody(413, 'PAYLOAD_TOO_LARGE') : recorded(request.events),
    );
    for (let n = 0; n < 8; n++) void reporter.report(event(n));
    void reporter.report({ subscription_item_id: 1, quantity: 1, idempotency_key: 'x'.repeat(255) });
    void reporter.report({ subscription_item_id: 1, quantity: 1, idempotency_key: 'y'.repeat(255) });
    await reporter.flush();
    expect(requests[0]!.events).toHaveLength(10);
    // the next batch holds at most half the bytes of the one refused
    expect(requests[1]!.body.length).toBeLessThan(requests[0]!.body.length * 0.6);
    expect(rejections.map((r) => r.event.idempotency_key[0]).sort()).toEqual(['x', 'y']);
    const sent = requests.filter((r) => r.body.length <= 350);
    expect(keysOf(sent).sort()).toEqual(Array.from({ length: 8 }, (_, n) => `k-${n}`).sort());
  });

  it('sends the batch a 413 refused again as two halves, each event once', async () => {
    // ten events of the same size; the service takes at most five at a time
    const { reporter, requests, rejections } = scripted((request) =>
      request.events.length > 5 ? errorBody(413, 'PAYLOAD_TOO_LARGE') : recorded(request.events),
    );
    for (let n = 0; n < 10; n++) void reporter.report(event(n));
    await reporter.flush();
    expect(requests.map((r) => r.events.length)).toEqual([10, 5, 5]);
    expect(keysOf(requests.slice(1))).toEqual(Array.from({ length: 10 }, (_, n) => `k-${n}`));
    expect(rejections).toEqual([]);
    expect(reporter.stats).toMatchObject({ sent: 10, rejected: 0 });
  });

  describe('its defaults (on a fake clock)', () => {
    afterEach(() => {
      vi.useRealTimers();
      vi.restoreAllMocks();
    });

    it('waits 1 s for a batch to fill, and keeps at most 4 requests of 1,000 events in flight', async () => {
      vi.useFakeTimers();
      const { reporter, requests } = scripted(() => new Promise<Response>(() => {}), {
        flushIntervalMs: undefined,
        retry: undefined,
      });
      void reporter.report(event(0));
      await vi.advanceTimersByTimeAsync(999);
      expect(requests).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(requests.map((r) => r.events.length)).toEqual([1]);
      for (let n = 1; n <= 4000; n++) void reporter.report(event(n));
      expect(requests.map((r) => r.events.length)).toEqual([1, 1000, 1000, 1000]);
      expect(reporter.stats).toMatchObject({ buffered: 4001 });
    });

    it('leaves no timer running once its events are sent, nor once closed (the process may exit)', async () => {
      vi.useFakeTimers();
      const { reporter } = scripted();
      void reporter.report(event(1));
      await reporter.flush();
      // neither the request's timeout nor the flush interval outlives the request
      expect(vi.getTimerCount()).toBe(0);
      void reporter.report(event(2));
      expect(await reporter.close()).toEqual({ unsent: [] });
      // nor close()'s deadline, once everything went in time
      expect(vi.getTimerCount()).toBe(0);

      const paused = scripted(() => errorBody(503, 'SERVICE_UNAVAILABLE', { 'Retry-After': '60' }));
      void paused.reporter.report(event(3));
      const closing = paused.reporter.close({ timeoutMs: 1000 });
      await vi.advanceTimersByTimeAsync(1000);
      expect((await closing).unsent.map((e) => e.idempotency_key)).toEqual(['k-3']);
      // nor the pause that Retry-After asked for
      expect(vi.getTimerCount()).toBe(0);

      const stuck = scripted(() => new Promise<Response>(() => {}), {
        flushIntervalMs: 60_000,
        maxConcurrentRequests: 1,
      });
      void stuck.reporter.report(event(4));
      void stuck.reporter.flush();
      void stuck.reporter.report(event(5));
      const abandoning = stuck.reporter.close({ timeoutMs: 1000 });
      await vi.advanceTimersByTimeAsync(1000);
      expect((await abandoning).unsent.map((e) => e.idempotency_key)).toEqual(['k-4', 'k-5']);
      // nor the flush interval of an event still buffered at the deadline
      expect(vi.getTimerCount()).toBe(0);
    });

    it('sends nothing before Retry-After has passed, not even a batch filled the millisecond before', async () => {
      vi.useFakeTimers();
      vi.spyOn(Math, 'random').mockReturnValue(0);
      let retriedAt: number | undefined;
      const { reporter, requests } = scripted(
        (request, index) =>
          index === 0
            ? errorBody(503, 'SERVICE_UNAVAILABLE', { 'Retry-After': '1' })
            : recorded(request.events),
        { maxBatchEvents: 1, metrics: { retried: () => (retriedAt ??= Date.now()) } },
      );
      const start = Date.now();
      void reporter.report(event(1));
      await vi.advanceTimersByTimeAsync(0);
      expect(retriedAt).toBe(start);
      await vi.advanceTimersByTimeAsync(999);
      // a full batch pumps at once: 1 ms of the pause is left
      void reporter.report(event(2));
      await vi.advanceTimersByTimeAsync(0);
      expect(requests).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(requests.map((r) => r.at - start)).toEqual([0, 1000, 1000]);
      expect(keysOf(requests)).toEqual(['k-1', 'k-1', 'k-2']);
    });

    it('arms one timer for a pause however often it is woken in it, and leaves none once closed', async () => {
      vi.useFakeTimers();
      const { reporter, requests } = scripted(() =>
        errorBody(503, 'SERVICE_UNAVAILABLE', { 'Retry-After': '60' }),
      );
      void reporter.report(event(1));
      void reporter.flush();
      await vi.advanceTimersByTimeAsync(0);
      expect(requests).toHaveLength(1);
      // the request's timeout ended with it: the pause is the one timer left
      expect(vi.getTimerCount()).toBe(1);
      void reporter.flush();
      void reporter.flush();
      // an event reported in the pause joins the batch put back: no flush interval of its own
      void reporter.report(event(2));
      expect(vi.getTimerCount()).toBe(1);
      const closing = reporter.close({ timeoutMs: 1000 });
      await vi.advanceTimersByTimeAsync(1000);
      expect((await closing).unsent.map((e) => e.idempotency_key)).toEqual(['k-1', 'k-2']);
      // a pause timer left behind would keep the process alive for up to the pause
      expect(vi.getTimerCount()).toBe(0);
    });

    it('gives close() 30 s to send what it holds, then returns the rest unsent', async () => {
      vi.useFakeTimers();
      const { reporter } = scripted(() => new Promise<Response>(() => {}), { requestTimeoutMs: 60_000 });
      void reporter.report(event(1));
      let result: CloseResult | undefined;
      void reporter.close().then((r) => {
        result = r;
      });
      await vi.advanceTimersByTimeAsync(29_999);
      expect(result).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(result?.unsent.map((e) => e.idempotency_key)).toEqual(['k-1']);
    });

    it("keeps each request under the service's 1 MiB body limit, even 1,000 events of long keys", async () => {
      vi.useFakeTimers();
      const { reporter, requests } = scripted();
      // 250 emoji (1,000 UTF-8 bytes) per key: 1,000 such events pass 1 MiB together
      const key = (n: number) => `${'\u{1f600}'.repeat(250)}-${n}`;
      for (let n = 0; n < 1000; n++)
        void reporter.report({ subscription_item_id: 1, quantity: 1, idempotency_key: key(n) });
      await reporter.flush();
      expect(requests.length).toBeGreaterThan(1);
      for (const request of requests)
        expect(Buffer.byteLength(request.body)).toBeLessThanOrEqual(1_000_000 + 1000);
      expect(keysOf(requests)).toEqual(Array.from({ length: 1000 }, (_, n) => key(n)));
    });

    it('holds at most 100,000 events', async () => {
      vi.useFakeTimers();
      const dropped: string[] = [];
      const { reporter } = scripted(() => new Promise<Response>(() => {}), {
        whenFull: 'drop',
        onDropped: (e) => dropped.push(e.idempotency_key),
      });
      for (let n = 0; n < 100_001; n++) void reporter.report(event(n));
      expect(dropped).toEqual(['k-100000']);
      expect(reporter.stats).toMatchObject({ buffered: 100_000, dropped: 1 });
    });

    it('abandons a request after 30 s, then backs off from 500 ms doubling up to 30 s', async () => {
      vi.useFakeTimers();
      vi.spyOn(Math, 'random').mockReturnValue(0.999999);
      const { reporter, requests } = scripted(
        (request, index) =>
          index === 0
            ? new Promise<Response>(() => {})
            : index < 9
              ? errorBody(500, 'INTERNAL_SERVER_ERROR')
              : recorded(request.events),
        { flushIntervalMs: undefined, retry: undefined },
      );
      void reporter.report(event(1));
      void reporter.flush();
      await vi.advanceTimersByTimeAsync(0);
      expect(requests).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(29_999);
      expect(requests).toHaveLength(1);
      // abandoned at 30 s, sent again after the first backoff step (all of 500 ms, random() near 1)
      await vi.advanceTimersByTimeAsync(1 + 499);
      expect(requests).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(requests).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(60_000 * 4);
      expect(requests).toHaveLength(10);
      const gaps = requests.slice(1).map((r, i) => r.at - requests[i]!.at);
      expect(gaps).toEqual([30_500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    });
  });

  describe('a full buffer', () => {
    it("drops new events to onDropped with whenFull: 'drop', holding at most maxBufferedEvents", async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const dropped: string[] = [];
      const { reporter, requests } = scripted(
        async (request) => {
          await gate;
          return recorded(request.events);
        },
        {
          maxBufferedEvents: 5,
          maxBatchEvents: 2,
          whenFull: 'drop',
          onDropped: (e) => dropped.push(e.idempotency_key),
        },
      );
      for (let n = 0; n < 8; n++) await reporter.report(event(n));
      expect(dropped).toEqual(['k-5', 'k-6', 'k-7']);
      expect(reporter.stats).toMatchObject({ buffered: 5, dropped: 3 });
      release();
      await reporter.flush();
      expect(keysOf(requests).sort()).toEqual(['k-0', 'k-1', 'k-2', 'k-3', 'k-4']);
    });

    it("makes report() wait for room with whenFull: 'wait', first come first served", async () => {
      let release!: () => void;
      let gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const { reporter, requests } = scripted(
        async (request) => {
          await gate;
          return recorded(request.events);
        },
        { maxBufferedEvents: 4, maxBatchEvents: 2, maxConcurrentRequests: 1 },
      );
      const admitted: number[] = [];
      const reports = Array.from({ length: 7 }, (_, n) =>
        reporter.report(event(n)).then(() => admitted.push(n)),
      );
      await sleep(5);
      expect(admitted).toEqual([0, 1, 2, 3]);
      expect(reporter.stats).toMatchObject({ buffered: 4, waiting: 3 });
      const first = release;
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      first();
      await sleep(5);
      // one batch of 2 answered: two waiting reports admitted, in order
      expect(admitted).toEqual([0, 1, 2, 3, 4, 5]);
      release();
      gate = Promise.resolve();
      await Promise.all(reports);
      await reporter.flush();
      expect(keysOf(requests)).toEqual(['k-0', 'k-1', 'k-2', 'k-3', 'k-4', 'k-5', 'k-6']);
    });
    it('keeps reports waiting for room in their order, even against a report made from a metrics hook', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let reportedFromHook = false;
      let reporter!: UsageReporter;
      const scriptedReporter = scripted(
        async (request, index) => {
          if (index === 0) await gate;
          return recorded(request.events);
        },
        {
          maxBufferedEvents: 2,
          maxBatchEvents: 2,
          maxConcurrentRequests: 1,
          metrics: {
            sent: () => {
              if (reportedFromHook) return;
              reportedFromHook = true;
              void reporter.report(event(9));
            },
          },
        },
      );
      reporter = scriptedReporter.reporter;
      const reports = Array.from({ length: 4 }, (_, n) => reporter.report(event(n)));
      expect(reporter.stats).toMatchObject({ buffered: 2, waiting: 2 });
      release();
      await Promise.all(reports);
      await reporter.flush();
      expect(scriptedReporter.requests.map((r) => r.events.map((e) => e.idempotency_key))).toEqual([
        ['k-0', 'k-1'],
        ['k-2', 'k-3'],
        ['k-9'],
      ]);
    });
  });

  describe('close()', () => {
    it('sends everything held, then refuses new reports', async () => {
      const { reporter, requests } = scripted(undefined, { flushIntervalMs: 60_000 });
      for (let n = 0; n < 1500; n++) void reporter.report(event(n));
      const result = await reporter.close();
      expect(result.unsent).toEqual([]);
      expect(keysOf(requests)).toHaveLength(1500);
      expect(() => reporter.report(event(9))).toThrow(/close/);
    });

    it('returns what it could not send by the deadline, keys included, aborting requests still running', async () => {
      let aborted = 0;
      const { reporter, requests } = scripted(
        () => errorBody(503, 'SERVICE_UNAVAILABLE', { 'Retry-After': '1' }),
        {
          maxBatchEvents: 2,
          maxConcurrentRequests: 1,
          fetch: (_url, init) =>
            new Promise<Response>((_, reject) => {
              requests.push({ at: Date.now(), body: String(init.body), events: [], headers: {} });
              init.signal!.addEventListener('abort', () => {
                aborted++;
                reject(new Error('aborted'));
              });
            }),
        },
      );
      for (let n = 0; n < 5; n++) void reporter.report(event(n));
      const started = Date.now();
      const { unsent } = await reporter.close({ timeoutMs: 100 });
      expect(Date.now() - started).toBeLessThan(1000);
      expect(aborted).toBe(1);
      // abandoned, not retried: nothing is sent again after the deadline
      expect(reporter.stats).toMatchObject({ sent: 0, retried: 0 });
      expect(unsent.map((e) => e.idempotency_key)).toEqual(['k-0', 'k-1', 'k-2', 'k-3', 'k-4']);
      expect(unsent[0]).toMatchObject({
        subscription_item_id: 1,
        quantity: 1,
        timestamp: expect.any(String),
      });
    });

    it("answers a second close() with the first one's result, its unsent events included", async () => {
      const buffered: number[] = [];
      const { reporter } = scripted(() => new Promise<Response>(() => {}), {
        metrics: { buffered: (n) => buffered.push(n) },
      });
      void reporter.report(event(0));
      void reporter.report(event(1));
      const first = reporter.close({ timeoutMs: 50 });
      const second = reporter.close({ timeoutMs: 50 });
      const [a, b] = await Promise.all([first, second]);
      expect(a.unsent.map((e) => e.idempotency_key)).toEqual(['k-0', 'k-1']);
      expect(b).toBe(a);
      expect(await reporter.close()).toBe(a);
      // the events handed back are no longer held
      expect(buffered).toEqual([1, 2, 0]);
    });

    it('ends the reports still waiting for room: their events are among the unsent', async () => {
      const { reporter } = scripted(() => new Promise<Response>(() => {}), { maxBufferedEvents: 1 });
      void reporter.report(event(0));
      const waiting = reporter.report(event(1));
      const { unsent } = await reporter.close({ timeoutMs: 50 });
      await waiting;
      expect(unsent.map((e) => e.idempotency_key)).toEqual(['k-0', 'k-1']);
    });
  });

  it('flush() waits for the events reported before it, through retries', async () => {
    let failures = 2;
    const { reporter } = scripted((request) =>
      failures-- > 0 ? errorBody(503, 'SERVICE_UNAVAILABLE') : recorded(request.events),
    );
    void reporter.report(event(1));
    await reporter.flush();
    expect(reporter.stats).toMatchObject({ sent: 1, retried: 2, buffered: 0 });
    await expect(reporter.flush()).resolves.toBeUndefined();
  });

  it('flush() waits for the events reported before it, not for those reported after', async () => {
    const { reporter, requests } = scripted((request) =>
      request.events.some((e) => e.idempotency_key === 'k-2')
        ? new Promise<Response>(() => {}) // never answered
        : recorded(request.events),
    );
    void reporter.report(event(1));
    const flushed = reporter.flush();
    void reporter.report(event(2));
    const outcome = await Promise.race([flushed.then(() => 'flushed'), sleep(1000).then(() => 'waiting')]);
    expect(outcome).toBe('flushed');
    // k-2 went in a request of its own, still unanswered
    await vi.waitFor(() => expect(keysOf(requests)).toEqual(['k-1', 'k-2']));
  });

  it('flush() waits for the reports still waiting for room when it was called, not only the buffered ones', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { reporter, requests } = scripted(
      async (request, index) => {
        if (index === 0) await gate;
        return recorded(request.events);
      },
      { maxBufferedEvents: 2, maxBatchEvents: 2, maxConcurrentRequests: 1 },
    );
    const reports = Array.from({ length: 5 }, (_, n) => reporter.report(event(n)));
    expect(reporter.stats).toMatchObject({ buffered: 2, waiting: 3 });
    const flushed = reporter.flush().then(() => keysOf(requests).length);
    release();
    // all five were sent (and answered) when flush() resolved
    expect(await flushed).toBe(5);
    await Promise.all(reports);
    expect(keysOf(requests)).toEqual(['k-0', 'k-1', 'k-2', 'k-3', 'k-4']);
    expect(reporter.stats).toMatchObject({ sent: 5, buffered: 0, waiting: 0 });
  });

  it('sends a lone event only after its own flush interval, however the batch before it went', async () => {
    const { reporter, requests } = scripted(undefined, { flushIntervalMs: 100 });
    void reporter.report(event(1));
    await vi.waitFor(() => expect(requests).toHaveLength(1), { timeout: 1000, interval: 5 });
    const reportedAt = Date.now();
    void reporter.report(event(2));
    await sleep(40);
    expect(requests).toHaveLength(1);
    await vi.waitFor(() => expect(requests).toHaveLength(2), { timeout: 1000, interval: 5 });
    expect(requests[1]!.at - reportedAt).toBeGreaterThanOrEqual(95);
    // a flush() sends the buffer at once; the interval of what follows starts at its own report
    void reporter.report(event(3));
    await reporter.flush();
    await sleep(40);
    const laterAt = Date.now();
    void reporter.report(event(4));
    await vi.waitFor(() => expect(requests).toHaveLength(4), { timeout: 1000, interval: 5 });
    expect(requests[3]!.at - laterAt).toBeGreaterThanOrEqual(95);
  });

  it('sends a batch put back after a failure again once the backoff ends, with no flush() asked', async () => {
    const { reporter, requests } = scripted(
      (request, index) => (index === 0 ? errorBody(503, 'SERVICE_UNAVAILABLE') : recorded(request.events)),
      { flushIntervalMs: 10 },
    );
    void reporter.report(event(1));
    await vi.waitFor(() => expect(requests).toHaveLength(2), { timeout: 2000 });
    expect(reporter.stats).toMatchObject({ sent: 1, retried: 1 });
  });

  it('survives an onRejected that throws: the other events of the batch are still sent, and flush() ends', async () => {
    const warnings: string[] = [];
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation((w) => void warnings.push(String(w)));
    try {
      const { reporter, requests } = scripted(
        (request) =>
          Response.json({
            data: request.events.map((e) =>
              e.subscription_item_id === 404
                ? { status: 404, error: { error_code: 'NOT_FOUND', detail: 'no item', request_id: 'r' } }
                : { status: 201, data: e },
            ),
          }),
        {
          onRejected: () => {
            throw new Error('caller bug');
          },
        },
      );
      void reporter.report(event(1, 404));
      void reporter.report(event(2));
      await reporter.flush();
      expect(requests).toHaveLength(1);
      expect(reporter.stats).toMatchObject({ sent: 1, rejected: 1, buffered: 0 });
      expect(warnings.some((w) => w.includes('onRejected threw') && w.includes('caller bug'))).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('survives an onDropped that throws: report() still resolves, the event counted dropped', async () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const { reporter } = scripted(() => new Promise<Response>(() => {}), {
        maxBufferedEvents: 1,
        whenFull: 'drop',
        onDropped: () => {
          throw new Error('caller bug');
        },
      });
      await reporter.report(event(1));
      await expect(reporter.report(event(2))).resolves.toBeUndefined();
      expect(reporter.stats).toMatchObject({ buffered: 1, dropped: 1 });
    } finally {
      spy.mockRestore();
    }
  });

  it('warns of a refused event, naming its key, when no onRejected was given', async () => {
    const warnings: string[] = [];
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation((w) => void warnings.push(String(w)));
    try {
      const { reporter } = scripted(() => errorBody(403, 'FORBIDDEN'), { onRejected: undefined });
      void reporter.report(event(7));
      await reporter.flush();
      expect(reporter.stats).toMatchObject({ rejected: 1, sent: 0 });
      expect(warnings).toEqual([expect.stringContaining('usage event k-7 rejected')]);
      expect(warnings[0]).toContain('FORBIDDEN');
    } finally {
      spy.mockRestore();
    }
  });

  it('counts events into the metrics hooks as they move: sent, retried, rejected, dropped, and held', async () => {
    const calls: string[] = [];
    let fail!: () => void;
    const failing = new Promise<void>((resolve) => {
      fail = resolve;
    });
    const { reporter } = scripted(
      async (request, index) => {
        if (index === 0) {
          await failing;
          return errorBody(500, 'INTERNAL_SERVER_ERROR');
        }
        return Response.json({
          data: request.events.map((e) =>
            e.subscription_item_id === 404
              ? { status: 404, error: { error_code: 'NOT_FOUND', detail: 'no item', request_id: 'r' } }
              : { status: 201, data: e },
          ),
        });
      },
      {
        maxBufferedEvents: 4,
        whenFull: 'drop',
        onDropped: () => {},
        metrics: {
          sent: (n) => calls.push(`sent ${n}`),
          retried: (n, reason) => calls.push(`retried ${n} ${reason}`),
          rejected: (n) => calls.push(`rejected ${n}`),
          dropped: (n) => calls.push(`dropped ${n}`),
          buffered: (n) => calls.push(`buffered ${n}`),
        },
      },
    );
    void reporter.report(event(1));
    void reporter.report(event(2, 404));
    void reporter.report(event(3));
    const flushed = reporter.flush();
    // three events in a request, one more buffered: four held, the bound; a fifth is dropped
    void reporter.report(event(4));
    void reporter.report(event(5));
    expect(calls).toEqual(['buffered 1', 'buffered 2', 'buffered 3', 'buffered 4', 'dropped 1']);
    calls.length = 0;
    fail();
    await flushed;
    expect(calls).toEqual(['retried 3 server_error', 'rejected 1', 'sent 3', 'buffered 0']);
    expect(reporter.stats).toMatchObject({ sent: 3, rejected: 1, retried: 3, dropped: 1, buffered: 0 });
  });

  it('calls no metrics hook for a move of no events: a batch all refused was sent none', async () => {
    const calls: string[] = [];
    const { reporter } = scripted(
      (request) =>
        Response.json({
          data: request.events.map(() => ({
            status: 404,
            error: { error_code: 'NOT_FOUND', detail: 'no item', request_id: 'r' },
          })),
        }),
      {
        metrics: {
          sent: (n) => calls.push(`sent ${n}`),
          retried: (n) => calls.push(`retried ${n}`),
          rejected: (n) => calls.push(`rejected ${n}`),
          buffered: (n) => calls.push(`buffered ${n}`),
        },
      },
    );
    void reporter.report(event(1, 404));
    void reporter.report(event(2, 404));
    await reporter.flush();
    expect(calls).toEqual(['buffered 1', 'buffered 2', 'rejected 1', 'rejected 1', 'buffered 0']);
    expect(reporter.stats).toMatchObject({ sent: 0, rejected: 2 });
  });

  it('survives metrics hooks and callbacks that throw', async () => {
    const { reporter, requests } = scripted(undefined, {
      metrics: {
        buffered: () => {
          throw new Error('hook');
        },
        sent: () => {
          throw new Error('hook');
        },
      },
    });
    void reporter.report(event(1));
    await reporter.flush();
    expect(requests).toHaveLength(1);
    expect(reporter.stats.sent).toBe(1);
  });
});
