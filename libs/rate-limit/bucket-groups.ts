/** An hourly bucket a request counts against, with the limit and ttl of its organization. */
export interface Bucket {
  key: string;
  limit: number;
  ttlSeconds: number;
}

/** The requests of one script call that count against one bucket (same limit, same ttl). */
export interface BucketGroup {
  /** undefined: requests counted elsewhere, which only need their place in the reply. */
  bucket: Bucket | undefined;
  /** Positions in the batch, in the order the requests were submitted. */
  members: number[];
}

/**
 * Groups a batch's requests by bucket, in the order each bucket first appears, so a script counts
 * each bucket once (`consume_requests`) instead of once per request.
 */
export function groupByBucket(buckets: readonly (Bucket | undefined)[]): BucketGroup[] {
  const groups = new Map<string, BucketGroup>();
  let last: BucketGroup | undefined;
  for (let i = 0; i < buckets.length; i++) {
    const bucket = buckets[i];
    // Most turns carry one organization's requests: the previous group, without building its id.
    if (!last || !sameBucket(last.bucket, bucket)) {
      const id = bucket ? `${bucket.key}\n${bucket.limit}\n${bucket.ttlSeconds}` : '';
      last = groups.get(id);
      if (!last) {
        last = { bucket, members: [] };
        groups.set(id, last);
      }
    }
    last.members.push(i);
  }
  return [...groups.values()];
}

function sameBucket(a: Bucket | undefined, b: Bucket | undefined): boolean {
  if (!a || !b) return a === b;
  return a.key === b.key && a.limit === b.limit && a.ttlSeconds === b.ttlSeconds;
}

/**
 * The decision for the `nth` request (0-based) of a group, given the bucket's count before the group
 * and how many of the group were allowed: exactly what that request would have got had the requests
 * been counted one by one, in order (a refused request does not count).
 */
export function nthDecision(
  countBefore: number,
  allowed: number,
  nth: number,
): { count: number; allowed: boolean } {
  return nth < allowed
    ? { count: countBefore + nth + 1, allowed: true }
    : { count: countBefore + allowed, allowed: false };
}
