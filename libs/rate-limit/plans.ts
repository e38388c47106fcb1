/** Requests per UTC hour, per organization (spec "Rate limits"). */
export const PLAN_LIMITS = { beta: 2000, starter: 10_000, growth: 50_000, scale: 200_000 } as const;
export type Plan = keyof typeof PLAN_LIMITS;
export const PLANS = Object.keys(PLAN_LIMITS) as Plan[];

export function requestsPerHour(plan: Plan, override: number | null | undefined): number {
  return override ?? PLAN_LIMITS[plan];
}
