import { describe, expect, it } from 'vitest';
import { PLAN_LIMITS, PLANS, requestsPerHour } from './plans.js';

describe('requestsPerHour', () => {
  it('gives each plan\'s hourly limit (spec "Rate limits") when there is no override', () => {
    expect(PLANS).toEqual(['beta', 'starter', 'growth', 'scale']);
    expect(PLANS.map((plan) => requestsPerHour(plan, null))).toEqual([2000, 10_000, 50_000, 200_000]);
    expect(requestsPerHour('starter', undefined)).toBe(PLAN_LIMITS.starter);
  });

  it("takes an organization's override over its plan, whether higher or lower", () => {
    expect(requestsPerHour('scale', 5)).toBe(5);
    expect(requestsPerHour('beta', 1_000_000)).toBe(1_000_000);
  });
});
