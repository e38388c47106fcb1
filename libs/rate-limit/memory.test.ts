import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from './memory.js';

const AT = Date.UTC(2026, 0, 1, 5, 0, 0);

/** The buckets the store still holds: each a bucket of a past hour it must not keep forever. */
function held(store: MemoryRateLimitStore): string[] {
  return [...(store as unknown as { buckets: Map<string, unknown> }).buckets.keys()];
}

describe('MemoryRateLimitStore memory', () => {
  it('forgets the buckets that have expired when a new one starts, one ending at that instant included', async () => {
    let now = AT;
    const store = new MemoryRateLimitStore(() => now);
    await store.consume('ends-at-10s', 5, 10);
    await store.consume('ends-at-11s', 5, 11);
    now = AT + 10_000;
    await store.consume('new', 5, 60);
    expect(held(store).sort()).toEqual(['ends-at-11s', 'new']);
    // a bucket still counting is not a new one: nothing is swept
    now = AT + 11_000;
    await store.consume('new', 5, 60);
    expect(held(store).sort()).toEqual(['ends-at-11s', 'new']);
  });
});
