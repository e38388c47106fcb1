import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AuthContext } from '../../libs/auth/index.js';
import type { DependencyCheck } from '../../libs/observability/index.js';
import type { Platform } from '../../libs/platform/index.js';
import type { PortalUsageSource } from '../../libs/portal/index.js';
import type { PlannedCount, RateLimitDecision } from '../../libs/rate-limit/index.js';
import type { UsageIngest, UsageReadStores } from '../../libs/usage/index.js';

/** Everything a route may use, built once per process (see app.ts). */
export interface ApiDeps {
  platform: Platform;
  /** Body size limit in bytes (413 beyond it). */
  bodyLimit: number;
  /** Memory for invoices' public JSON kept between list requests (libs/invoices RenderedInvoicePages). */
  invoiceCacheBytes: number;
  /** External base URL (scheme://host[:port]) when configured; otherwise derived from the request. */
  publicBaseUrl: string | undefined;
  /** Base of the links to pages for people (PUBLIC_URL); unset: the api's own URL. */
  publicUrl?: string | undefined;
  /**
   * Current usage and the upcoming invoice for the portal (the usage read-back, docs/architecture.md, "The usage read-back");
   * unset, the portal says those figures are not available yet.
   */
  portalUsage?: PortalUsageSource | undefined;
  webhookAllowLocalhost: boolean;
  /** Attempts in the series a webhook recovery starts (WEBHOOK_MAX_ATTEMPTS). */
  webhookMaxAttempts: number;
  /** The usage ingest core, shared with the ingest service when both run in one process. */
  usageIngest: UsageIngest;
  /** The usage read-back's stores (docs/architecture.md, "The usage read-back"): totals, the sinks' watermark, the log voids go on. */
  usageRead: UsageReadStores;
  /** Dependencies beyond the platform's (database, Redis, ClickHouse) that /readyz checks, e.g. the usage log. */
  extraReadinessChecks?: () => DependencyCheck[];
}

/**
 * How a route is authenticated: `required` (the default) answers 401 without a valid key;
 * `optional` authenticates when a key is sent (GET /meta); `if-valid` counts the request when a
 * valid key is sent and otherwise goes on without a 401 (unknown routes, wrong methods: their
 * answer is 404 or 405 whoever asks); `none` never looks at the key.
 */
export type AuthMode = 'required' | 'optional' | 'if-valid' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    /**
     * `handler`: the route counts its request against the hourly limit in a store call of its own
     * (plugins/authentication.ts, countInHandler) instead of the authentication hook's.
     */
    countedBy?: 'hook' | 'handler';
  }
  interface FastifyInstance {
    deps: ApiDeps;
    /** Resolves once no request's work is running (plugins/in-flight.ts); close resources after it. */
    requestsFinished(): Promise<void>;
  }
  interface FastifyRequest {
    auth: AuthContext | undefined;
    rateLimit: RateLimitDecision | undefined;
    /** The count the handler is to make (countedBy 'handler'), until it is made. */
    rateLimitPlanned: PlannedCount | undefined;
  }
}

export type ApiInstance = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** The org of an authenticated request; routes with auth 'required' always have one. */
export function orgIdOf(request: { auth: AuthContext | undefined }): number {
  if (!request.auth) throw new Error('route used without authentication');
  return request.auth.orgId;
}
