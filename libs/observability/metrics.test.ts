import { describe, expect, it } from 'vitest';
import {
  ingestEvents,
  kafkaProduceBatchSize,
  registry,
  requestInstruments,
  secondsSince,
  sinkLagSeconds,
} from './metrics.js';

describe('requestInstruments', () => {
  it('hands out one child per method, route pattern and status, each counting apart', async () => {
    const find = requestInstruments('metrics-test');
    const get = find('GET', '/items/:id', 200);
    expect(find('GET', '/items/:id', 200)).toBe(get);
    const others = [
      find('POST', '/items/:id', 200),
      find('GET', '/items/:id', 404),
      find('GET', '/orders/:id', 200),
    ];
    for (const other of others) expect(other).not.toBe(get);
    expect(new Set(others).size).toBe(3);

    get.requests.inc();
    get.duration.observe(0.02);
    others[0]!.requests.inc(2);
    others[1]!.requests.inc(3);
    const text = await registry.metrics();
    const line = (method: string, route: string, status: number) =>
      `billing_http_requests_total{service="metrics-test",method="${method}",route="${route}",status="${status}"}`;
    expect(text).toContain(`${line('GET', '/items/:id', 200)} 1`);
    expect(text).toContain(`${line('POST', '/items/:id', 200)} 2`);
    expect(text).toContain(`${line('GET', '/items/:id', 404)} 3`);
    expect(text).toContain(
      'billing_http_request_duration_seconds_count{service="metrics-test",method="GET",route="/items/:id",status="200"} 1',
    );
  });
});

describe('secondsSince', () => {
  it('is in seconds', () => {
    const elapsed = secondsSince(process.hrtime.bigint() - 1_500_000_000n);
    expect(elapsed).toBeGreaterThanOrEqual(1.5);
    expect(elapsed).toBeLessThan(2.5);
  });
});

describe('instrument names, labels and buckets (what dashboards query)', () => {
  it('exposes the sink lag gauges, ingest outcomes and produce batch sizes under their names', async () => {
    sinkLagSeconds.set({ sink: 'names-test' }, 1.5);
    ingestEvents.inc({ outcome: 'rejected', reason: 'names-test' });
    kafkaProduceBatchSize.observe(2000);
    const text = await registry.metrics();
    expect(text).toContain('billing_sink_lag_seconds{sink="names-test"} 1.5');
    expect(text).toContain('billing_ingest_events_total{outcome="rejected",reason="names-test"} 1');
    // 2000 falls past the 1000 bucket and into the 2500 one
    expect(text).toMatch(/billing_kafka_produce_batch_size_bucket\{le="1000"\} 0\n/);
    expect(text).toMatch(/billing_kafka_produce_batch_size_bucket\{le="2500"\} 1\n/);
  });
});

describe('the process metrics', () => {
  it("expose the process's own CPU, memory and event-loop lag beside the billing ones", async () => {
    const text = await registry.metrics();
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(text).toContain('# TYPE process_resident_memory_bytes gauge');
    expect(text).toContain('# TYPE nodejs_eventloop_lag_p99_seconds gauge');
  });
});
