import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import type { Plan } from '../rate-limit/index.js';
import { bearerToken, hashApiKey, looksLikeApiKey } from './keys.js';

export interface AuthContext {
  orgId: number;
  keyId: number;
  plan: Plan;
  rateLimitOverride: number | null;
}

interface CacheEntry {
  context: AuthContext | null;
  expiresAt: number;
}

/** How often `watchRevocations` reads the keys revoked lately. */
const REVOCATION_POLL_MS = 1000;
/**
 * How far back each read looks: a revocation is seen even if its transaction committed late or a
 * few reads failed. Evicting a key twice costs one lookup.
 */
const REVOCATION_LOOKBACK_SECONDS = 120;

/**
 * Resolves a bearer key to its organization. Lookups are cached in-process (bounded, short TTL)
 * so the hot path does not query Postgres per request; a plan change or a new override takes
 * effect within the TTL, a revoked key within about a second (`watchRevocations`), or the TTL
 * if the database cannot be read. Unknown keys are cached too, briefly, so a flood of bad keys
 * does not become a flood of queries. Concurrent misses for one key share one query.
 * The key itself is never logged nor put in an error: only its hash is kept.
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<AuthContext | null>>();
  private readonly ttlMs: number;
  private readonly negativeTtlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly db: Queryable,
    options: { ttlSeconds: number; maxEntries: number; now?: () => number },
  ) {
    this.ttlMs = options.ttlSeconds * 1000;
    this.negativeTtlMs = Math.min(this.ttlMs, 5000);
    this.maxEntries = options.maxEntries;
    this.now = options.now ?? Date.now;
  }

  /** Throws ApiError UNAUTHORIZED for a missing, malformed, unknown or revoked key. */
  async authenticate(authorizationHeader: string | undefined): Promise<AuthContext> {
    const token = bearerToken(authorizationHeader);
    if (!token) throw ApiError.unauthorized();
    if (!looksLikeApiKey(token)) throw ApiError.unauthorized('The API key is malformed.');
    const hash = hashApiKey(token);
    // Every request of a known key takes this path: no second async step.
    const cached = this.cache.get(hash);
    const context = cached && cached.expiresAt > this.now() ? cached.context : await this.resolve(hash);
    if (!context) throw ApiError.unauthorized('The API key is invalid or has been revoked.');
    return context;
  }

  /**
   * Drops the keys revoked in the last minutes from the cache: one indexed query (the console
   * that revokes a key is another process, and NOTIFY does not cross the embedded database's
   * connections, so every mode polls). Returns how many cached keys it dropped.
   */
  async evictRevoked(): Promise<number> {
    if (this.cache.size === 0) return 0;
    const { rows } = await this.db.query<{ key_hash: string }>(
      `SELECT key_hash FROM api_keys
        WHERE revoked_at IS NOT NULL AND revoked_at > now() - make_interval(secs => $1)`,
      [REVOCATION_LOOKBACK_SECONDS],
    );
    let evicted = 0;
    for (const { key_hash: hash } of rows) {
      const cached = this.cache.get(hash);
      if (cached?.context) {
        this.cache.delete(hash);
        evicted++;
      }
    }
    return evicted;
  }

  /** Evicts revoked keys every second until the returned function is called; failures wait for the next. */
  watchRevocations(onError: (error: unknown) => void): () => void {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.evictRevoked()
        .catch(onError)
        .finally(() => {
          running = false;
        });
    }, REVOCATION_POLL_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** A key not in the cache (or expired there): looked up once however many requests wait for it. */
  private async resolve(hash: string): Promise<AuthContext | null> {
    let pending = this.inFlight.get(hash);
    if (!pending) {
      pending = this.lookup(hash).finally(() => this.inFlight.delete(hash));
      this.inFlight.set(hash, pending);
    }
    const context = await pending;
    this.remember(hash, context);
    return context;
  }

  private async lookup(hash: string): Promise<AuthContext | null> {
    const { rows } = await this.db.query<AuthContext>(
      `SELECT k.id AS "keyId", k.org_id AS "orgId", o.plan, o.rate_limit_override AS "rateLimitOverride"
         FROM api_keys k JOIN organizations o ON o.id = k.org_id
        WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [hash],
    );
    return rows[0] ?? null;
  }

  private remember(hash: string, context: AuthContext | null): void {
    this.cache.delete(hash);
    if (this.cache.size >= this.maxEntries) {
      // Map iterates in insertion order: the first entry is the least recently stored.
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(hash, { context, expiresAt: this.now() + (context ? this.ttlMs : this.negativeTtlMs) });
  }
}
