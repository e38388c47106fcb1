import { describe, expect, it } from 'vitest';
import { rateLimitRejections } from '../observability/index.js';
import { rateLimitedError } from './headers.js';

const refused = {
  allowed: false,
  plan: 'growth' as const,
  limit: 50_000,
  remaining: 0,
  resetEpochSeconds: 1_795_388_400,
  secondsToReset: 75,
};

async function rejectionsOf(plan: string): Promise<number> {
  return (await rateLimitRejections.get()).values.find((value) => value.labels.plan === plan)?.value ?? 0;
}

describe('rateLimitedError', () => {
  it('is a 429 saying the limit, the plan and when it resets, with Retry-After in seconds', () => {
    const error = rateLimitedError(refused);
    expect(error.code).toBe('RATE_LIMITED');
    expect(error.message).toBe(
      "The organization's limit of 50000 requests per hour (plan growth) is exhausted; " +
        'it resets at the top of the UTC hour, in 75 s.',
    );
    expect(error.headers).toEqual({ 'Retry-After': '75' });
  });

  it('counts each rejection under its plan', async () => {
    const before = await rejectionsOf('growth');
    const scaleBefore = await rejectionsOf('scale');
    rateLimitedError(refused);
    rateLimitedError(refused);
    expect(await rejectionsOf('growth')).toBe(before + 2);
    expect(await rejectionsOf('scale')).toBe(scaleBefore);
  });
});
