import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotHistogram } from './hot-metrics.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** The same metrics twice: prom-client's, the oracle, and the hot ones, each in a registry of its own. */
function pair() {
  const oracle = new Registry();
  const hot = new Registry();
  const labelNames = ['service', 'status'] as const;
  return {
    oracle,
    hot,
    counters: [
      new Counter({ name: 'requests_total', help: 'Requests.', labelNames, registers: [oracle] }),
      new HotCounter({ name: 'requests_total', help: 'Requests.', labelNames, registers: [hot] }),
    ] as const,
    histograms: [
      new Histogram({
        name: 'duration_seconds',
        help: 'Time.',
        labelNames,
        buckets: BUCKETS,
        registers: [oracle],
      }),
      new HotHistogram({
        name: 'duration_seconds',
        help: 'Time.',
        labelNames,
        buckets: BUCKETS,
        registers: [hot],
      }),
    ] as const,
    unlabeled: [
      new Histogram({ name: 'batch_size', help: 'Sizes.', buckets: [1, 10], registers: [oracle] }),
      new HotHistogram({ name: 'batch_size', help: 'Sizes.', buckets: [1, 10], registers: [hot] }),
      new Counter({ name: 'runs_total', help: 'Runs.', registers: [oracle] }),
      new HotCounter({ name: 'runs_total', help: 'Runs.', registers: [hot] }),
    ] as const,
  };
}

describe('hot metrics', () => {
  it('expose exactly what prom-client exposes for the same observations', async () => {
    const { oracle, hot, counters, histograms, unlabeled } = pair();
    // Nothing observed: the unlabeled ones read 0, the labeled ones are absent.
    expect(await hot.metrics()).toBe(await oracle.metrics());

    const [counter, hotCounter] = counters;
    const [histogram, hotHistogram] = histograms;
    const ok = { service: 'ingest', status: '201' };
    const failed = { service: 'ingest', status: '503' };
    const okChild = hotHistogram.labels(ok);
    // On a bound, between bounds, below the first, beyond the last, and 0.
    for (const seconds of [0.001, 0.0005, 0.05, 0.1, 3, 0, 0.0100001]) {
      histogram.labels(ok).observe(seconds);
      okChild.observe(seconds);
    }
    histogram.observe(failed, 0.2);
    hotHistogram.observe(failed, 0.2);
    counter.labels(ok).inc();
    hotCounter.labels(ok).inc();
    counter.inc(ok, 4);
    hotCounter.inc(ok, 4);
    counter.labels('api', '200').inc(2);
    hotCounter.labels('api', '200').inc(2);
    unlabeled[0].observe(5);
    unlabeled[1].observe(5);
    unlabeled[0].observe(50);
    unlabeled[1].observe(50);
    unlabeled[2].inc(3);
    unlabeled[3].inc(3);

    const text = await hot.metrics();
    expect(text).toBe(await oracle.metrics());
    expect(text).toContain('duration_seconds_bucket{le="0.1",service="ingest",status="201"} 6');
    expect(text).toContain('requests_total{service="ingest",status="201"} 5');
    expect(await hot.getMetricsAsJSON()).toEqual(await oracle.getMetricsAsJSON());
  });

  it('hand out one child per label set, counting on after a reset', async () => {
    const registry = new Registry();
    const counter = new HotCounter({ name: 'c_total', help: 'C.', labelNames: ['a'], registers: [registry] });
    const child = counter.labels({ a: 'x' });
    expect(counter.labels('x')).toBe(child);
    child.inc(2);
    registry.resetMetrics();
    child.inc();
    expect(await registry.metrics()).toContain('c_total{a="x"} 1');
  });

  it('start a histogram over after a reset, every bucket included, as prom-client does', async () => {
    // Alone in their registries: after a reset prom-client shows nothing of an unlabeled histogram.
    const [oracle, hot] = [new Registry(), new Registry()];
    const options = {
      name: 'duration_seconds',
      help: 'Time.',
      labelNames: ['service', 'status'],
      buckets: BUCKETS,
    };
    const histogram = new Histogram({ ...options, registers: [oracle] });
    const hotHistogram = new HotHistogram({ ...options, registers: [hot] });
    const ok = { service: 'ingest', status: '201' };
    const child = hotHistogram.labels(ok);
    for (const seconds of [0.0005, 0.005, 0.05, 2]) {
      histogram.observe(ok, seconds);
      child.observe(seconds);
    }
    oracle.resetMetrics();
    hot.resetMetrics();
    histogram.observe(ok, 0.5);
    child.observe(0.5);
    const text = await hot.metrics();
    expect(text).toBe(await oracle.metrics());
    expect(text).toContain('duration_seconds_bucket{le="0.1",service="ingest",status="201"} 0');
    expect(text).toContain('duration_seconds_bucket{le="+Inf",service="ingest",status="201"} 1');
  });

  it('keep buckets given out of order ascending and cumulative, +Inf equal to the count', async () => {
    const registry = new Registry();
    const histogram = new HotHistogram({ name: 'h', help: 'H.', buckets: [10, 1, 5], registers: [registry] });
    for (const value of [0.5, 3, 7, 7, 20]) histogram.observe(value);
    const buckets = (await registry.metrics()).split('\n').filter((line) => line.startsWith('h_bucket'));
    expect(buckets).toEqual([
      'h_bucket{le="1"} 1',
      'h_bucket{le="5"} 2',
      'h_bucket{le="10"} 4',
      'h_bucket{le="+Inf"} 5',
    ]);
  });

  it('keep label sets apart whose values join to the same text, escaped as prom-client escapes them', async () => {
    const [oracle, hot] = [new Registry(), new Registry()];
    const options = { name: 'c_total', help: 'C.', labelNames: ['route', 'status'] };
    const counter = new Counter({ ...options, registers: [oracle] });
    const hotCounter = new HotCounter({ ...options, registers: [hot] });
    const sets: [string, string][] = [
      ['/a', 'b'],
      ['/ab', ''],
      ['/a,b', 'c'],
      ['/a', 'b,c'],
      ['say "hi"\\', 'line\nbreak'],
    ];
    sets.forEach(([route, status], i) => {
      counter.inc({ route, status }, i + 1);
      hotCounter.labels(route, status).inc(i + 1);
    });
    const text = await hot.metrics();
    expect(text).toBe(await oracle.metrics());
    expect(text).toContain('c_total{route="/ab",status=""} 2');
    expect(text).toContain('c_total{route="say \\"hi\\"\\\\",status="line\\nbreak"} 5');
  });

  it('keep the label values they were given, whatever the caller does with its object after', async () => {
    const registry = new Registry();
    const counter = new HotCounter({ name: 'c_total', help: 'C.', labelNames: ['a'], registers: [registry] });
    const labels = { a: 'x' };
    counter.labels(labels).inc();
    labels.a = 'y';
    counter.labels(labels).inc(2);
    const text = await registry.metrics();
    expect(text).toContain('c_total{a="x"} 1');
    expect(text).toContain('c_total{a="y"} 2');
  });

  it('read label values left out of a positional labels() call as empty, one child with the full call', async () => {
    const registry = new Registry();
    const counter = new HotCounter({
      name: 'c_total',
      help: 'C.',
      labelNames: ['a', 'b'],
      registers: [registry],
    });
    counter.labels('x').inc();
    counter.labels('x', '').inc(2);
    counter.inc(3);
    const lines = (await registry.metrics()).split('\n').filter((line) => line.startsWith('c_total'));
    expect(lines).toEqual(['c_total{a="x",b=""} 3', 'c_total{a="",b=""} 3']);
  });

  it('refuse what prom-client refuses', () => {
    const registry = new Registry();
    const counter = new HotCounter({ name: 'c_total', help: 'C.', registers: [registry] });
    const histogram = new HotHistogram({ name: 'h', help: 'H.', buckets: [1], registers: [registry] });
    expect(() => counter.labels().inc(-1)).toThrow(TypeError);
    expect(() => counter.labels().inc(Number.NaN)).toThrow(TypeError);
    expect(() => counter.labels().inc(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => histogram.labels().observe(Number.POSITIVE_INFINITY)).toThrow(TypeError);
  });

  it('count one for an inc() given nothing, twice in a row two', async () => {
    const registry = new Registry();
    const counter = new HotCounter({ name: 'c_total', help: 'C.', registers: [registry] });
    counter.inc();
    counter.inc();
    expect(await registry.metrics()).toContain('c_total 2');
  });

  it('take an increment of 0, as prom-client does (a batch of no events counts nothing)', async () => {
    const registry = new Registry();
    const counter = new HotCounter({ name: 'c_total', help: 'C.', registers: [registry] });
    counter.labels().inc(0);
    counter.inc(0);
    expect(await registry.metrics()).toContain('c_total 0');
  });
});
