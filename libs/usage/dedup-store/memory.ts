import type { RateLimitStore } from '../../rate-limit/index.js';
import type {
  CountedBucket,
  CountedRead,
  CounterChange,
  CounterJournal,
  CounterState,
  DedupEntry,
  Reservation,
  ReservationResult,
  UsageDedupStore,
} from './store.js';

/** A period counter, as redis.ts keeps it in a hash (store.ts, UsageCounterStore). */
interface Counter {
  base: string | null;
  whole: bigint;
  fraction: bigint;
  lease: string | null;
  journalCount: number;
  journal: Map<string, string>;
}

interface Stored {
  value: string;
  expiresAt: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * The embedded twin of the Redis store: one process, so a Map is the shared state, and counting
 * goes through the same rate-limit store every other route of the process uses. Checking and setting
 * an identity happen without yielding to another task, which is what makes `reserve` a SET NX here.
 */
export class MemoryUsageDedupStore implements UsageDedupStore {
  private readonly records = new Map<string, Stored>();
  /** The process's counters: lost with it (a restart), then rebuilt from Postgres. */
  private readonly counters = new Map<string, Counter>();
  private nextSweepAt = 0;

  constructor(
    private readonly rateLimitStore: RateLimitStore,
    private readonly now: () => number = Date.now,
  ) {}

  async reserve({ bucket, entries, ttlSeconds }: Reservation): Promise<ReservationResult> {
    let count = 0;
    if (bucket) {
      const decision = await this.rateLimitStore.consume(bucket.key, bucket.limit, bucket.ttlSeconds);
      if (!decision.allowed)
        return { count: decision.count, allowed: false, existing: entries.map(() => null) };
      count = decision.count;
    }
    const now = this.now();
    this.sweep(now);
    const existing = entries.map(({ key, pending }) => {
      const found = this.read(key, now);
      if (found !== null) return found;
      this.records.set(key, { value: pending, expiresAt: now + ttlSeconds * 1000 });
      return null;
    });
    entries.forEach((entry, i) => {
      if (existing[i] === null && entry.counter) this.countIn(entry.counter);
    });
    return { count, allowed: true, existing };
  }

  async replace(key: string, expected: string, next: string, ttlSeconds: number): Promise<string | null> {
    const now = this.now();
    const current = this.read(key, now);
    if (current !== expected) return current;
    this.records.set(key, { value: next, expiresAt: now + ttlSeconds * 1000 });
    return next;
  }

  async release(entries: readonly DedupEntry[]): Promise<void> {
    const now = this.now();
    for (const { key, pending, counter } of entries) {
      if (this.read(key, now) !== pending) continue;
      this.records.delete(key);
      if (counter) this.uncount(counter);
    }
  }

  async readCounters(keys: readonly string[]): Promise<CounterState[]> {
    return keys.map((key) => {
      const counter = this.counters.get(key);
      return counter
        ? { base: counter.base, whole: counter.whole, fraction: counter.fraction, lease: counter.lease }
        : { base: null, whole: 0n, fraction: 0n, lease: null };
    });
  }

  async readCountersCounting(keys: readonly string[], bucket: CountedBucket): Promise<CountedRead> {
    const { count, allowed } = await this.rateLimitStore.consume(bucket.key, bucket.limit, bucket.ttlSeconds);
    return { count, allowed, states: await this.readCounters(keys) };
  }

  async adjustCounter(change: CounterChange): Promise<void> {
    this.countIn(change);
  }

  async beginRebuild(
    key: string,
    token: string,
    deadlineMs: number,
    nowMs: number,
  ): Promise<'ready' | 'building' | 'started'> {
    const counter = this.counterOf(key);
    if (counter.base !== null) return 'ready';
    const deadline = counter.lease ? Number(counter.lease.split('|')[1]) : Number.NaN;
    if (deadline > nowMs) return 'building';
    Object.assign(counter, {
      lease: `${token}|${deadlineMs}`,
      whole: 0n,
      fraction: 0n,
      journalCount: 0,
      journal: new Map(),
    });
    return 'started';
  }

  async readJournal(key: string): Promise<CounterJournal> {
    const counter = this.counters.get(key);
    return { count: String(counter?.journalCount ?? 0), entries: new Map(counter?.journal ?? []) };
  }

  async finishRebuild(key: string, token: string, base: string): Promise<'done' | 'lost'> {
    const counter = this.counters.get(key);
    if (!counter?.lease?.startsWith(`${token}|`)) return 'lost';
    Object.assign(counter, { base, lease: null, journalCount: 0, journal: new Map() });
    return 'done';
  }

  async abandonRebuild(key: string, token: string): Promise<void> {
    const counter = this.counters.get(key);
    if (!counter?.lease?.startsWith(`${token}|`)) return;
    Object.assign(counter, { lease: null, journalCount: 0, journal: new Map() });
  }

  private counterOf(key: string): Counter {
    let counter = this.counters.get(key);
    if (!counter) {
      counter = { base: null, whole: 0n, fraction: 0n, lease: null, journalCount: 0, journal: new Map() };
      this.counters.set(key, counter);
    }
    return counter;
  }

  private countIn({ key, whole, fraction, field }: CounterChange): void {
    const counter = this.counterOf(key);
    counter.whole += BigInt(whole);
    counter.fraction += BigInt(fraction);
    if (counter.lease) {
      counter.journal.set(field, `${whole}:${fraction}`);
      counter.journalCount++;
    }
  }

  /** A released event out of the counter it was counted in (redis.ts, RELEASE_LUA). */
  private uncount({ key, whole, fraction, field }: CounterChange): void {
    const counter = this.counters.get(key);
    if (!counter) return;
    if (counter.base === null && !(counter.lease && counter.journal.delete(field))) return;
    counter.whole -= BigInt(whole);
    counter.fraction -= BigInt(fraction);
    if (counter.base === null) counter.journalCount++;
  }

  async get(key: string): Promise<string | null> {
    return this.read(key, this.now());
  }

  async flush(): Promise<void> {}

  private read(key: string, now: number): string | null {
    const stored = this.records.get(key);
    if (!stored) return null;
    if (stored.expiresAt <= now) {
      this.records.delete(key);
      return null;
    }
    return stored.value;
  }

  private sweep(now: number): void {
    if (now < this.nextSweepAt) return;
    this.nextSweepAt = now + SWEEP_INTERVAL_MS;
    for (const [key, stored] of this.records) if (stored.expiresAt <= now) this.records.delete(key);
  }
}
