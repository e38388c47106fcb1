export { type Bucket, type BucketGroup, groupByBucket, nthDecision } from './bucket-groups.js';
export { rateLimitedError, rateLimitHeaders } from './headers.js';
export { type PlannedCount, type RateLimitDecision, RateLimiter, type RateLimitSubject } from './limiter.js';
export { MemoryRateLimitStore } from './memory.js';
export { PLAN_LIMITS, PLANS, type Plan, requestsPerHour } from './plans.js';
export { RATE_LIMIT_LUA, RedisRateLimitStore } from './redis.js';
export type { RateLimitStore } from './store.js';
