/**
 * Counts requests in a bucket. `consume` is atomic: it adds one only while the count is below
 * `limit`, so a rejected request does not count, and reports the count after the call.
 */
export interface RateLimitStore {
  consume(bucket: string, limit: number, ttlSeconds: number): Promise<{ count: number; allowed: boolean }>;
}
