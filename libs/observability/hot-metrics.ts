import type { Metric, Registry } from 'prom-client';

type Labels<L extends string> = Record<L, string>;

/** What a registry reads from a metric when scraped: prom-client's own shape, values in its order. */
interface Collected {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: { value: number; labels: Record<string, string | number>; metricName?: string; exemplar?: null }[];
}

/**
 * Counters and histograms for code taken tens of thousands of times a second (each usage request
 * counts itself two or three times). prom-client hashes and validates the labels on every inc and
 * observe, even through a child from `labels()`, a cost paid several times per event on the
 * ingest path. Here a child holds plain numbers, found once, and the registry reads them when scraped, in
 * the same exposition as prom-client's Counter and Histogram (hot-metrics.test.ts holds them to it).
 */
abstract class HotMetric<L extends string, Child> {
  private readonly children = new Map<string, { labels: Labels<L>; child: Child }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    registry: Registry,
  ) {
    // prom-client's registry reads any metric through get() and reset(); its typings name its own classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The child for these label values (by name, or positional in labelNames' order); keep it. */
  labels(...values: [Labels<L>] | string[]): Child {
    const named =
      typeof values[0] === 'object'
        ? values[0]
        : (Object.fromEntries(this.labelNames.map((name, i) => [name, values[i] ?? ''])) as Labels<L>);
    const key = this.labelNames.map((name) => named[name]).join('\u0000');
    let found = this.children.get(key);
    if (!found) {
      found = { labels: { ...named }, child: this.newChild() };
      this.children.set(key, found);
    }
    return found.child;
  }

  async get(): Promise<Collected> {
    // As prom-client, a metric without labels reads as 0 before anything happened.
    if (this.labelNames.length === 0 && this.children.size === 0) this.labels();
    const values: Collected['values'] = [];
    for (const { labels, child } of this.children.values()) this.collect(child, labels, values);
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values };
  }

  /** As prom-client: back to nothing observed (children handed out stay valid and start again at 0). */
  reset(): void {
    for (const { child } of this.children.values()) this.zero(child);
  }

  protected abstract readonly type: Collected['type'];
  protected abstract newChild(): Child;
  protected abstract zero(child: Child): void;
  protected abstract collect(child: Child, labels: Labels<L>, into: Collected['values']): void;
}

export class HotCounterChild {
  value = 0;

  inc(by = 1): void {
    if (!(by >= 0) || by === Number.POSITIVE_INFINITY) throw new TypeError(`Invalid increment: ${by}`);
    this.value += by;
  }
}

export class HotCounter<L extends string = never> extends HotMetric<L, HotCounterChild> {
  protected readonly type = 'counter';

  constructor(options: { name: string; help: string; labelNames?: readonly L[]; registers: Registry[] }) {
    super(options.name, options.help, options.labelNames ?? [], options.registers[0]!);
  }

  /** Looks the child up on every call: where it runs per request, keep the child from labels(). */
  inc(labelsOrBy?: Labels<L> | number, by = 1): void {
    if (typeof labelsOrBy === 'object') this.labels(labelsOrBy).inc(by);
    else this.labels().inc(labelsOrBy ?? 1);
  }

  protected newChild(): HotCounterChild {
    return new HotCounterChild();
  }

  protected zero(child: HotCounterChild): void {
    child.value = 0;
  }

  protected collect(child: HotCounterChild, labels: Labels<L>, into: Collected['values']): void {
    into.push({ value: child.value, labels });
  }
}

export class HotHistogramChild {
  /** Observations per bucket, not cumulative; the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly upperBounds: readonly number[]) {
    this.counts = new Float64Array(upperBounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    let bucket = 0;
    while (bucket < this.upperBounds.length && value > this.upperBounds[bucket]!) bucket++;
    this.counts[bucket]!++;
    this.sum += value;
    this.count++;
  }
}

export class HotHistogram<L extends string = never> extends HotMetric<L, HotHistogramChild> {
  protected readonly type = 'histogram';
  private readonly upperBounds: readonly number[];

  constructor(options: {
    name: string;
    help: string;
    labelNames?: readonly L[];
    buckets: readonly number[];
    registers: Registry[];
  }) {
    super(options.name, options.help, options.labelNames ?? [], options.registers[0]!);
    this.upperBounds = [...options.buckets].sort((a, b) => a - b);
  }

  /** Looks the child up on every call: where it runs per request, keep the child from labels(). */
  observe(labelsOrValue: Labels<L> | number, value?: number): void {
    if (typeof labelsOrValue === 'number') this.labels().observe(labelsOrValue);
    else this.labels(labelsOrValue).observe(value!);
  }

  protected newChild(): HotHistogramChild {
    return new HotHistogramChild(this.upperBounds);
  }

  protected zero(child: HotHistogramChild): void {
    child.counts.fill(0);
    child.sum = 0;
    child.count = 0;
  }

  protected collect(child: HotHistogramChild, labels: Labels<L>, into: Collected['values']): void {
    const bucketName = `${this.name}_bucket`;
    let cumulative = 0;
    this.upperBounds.forEach((le, i) => {
      cumulative += child.counts[i]!;
      into.push({ value: cumulative, metricName: bucketName, exemplar: null, labels: { le, ...labels } });
    });
    into.push({
      value: child.count,
      metricName: bucketName,
      exemplar: null,
      labels: { le: '+Inf', ...labels },
    });
    into.push({ value: child.sum, metricName: `${this.name}_sum`, labels });
    into.push({ value: child.count, metricName: `${this.name}_count`, labels });
  }
}
