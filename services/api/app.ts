import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ApiConfig } from '../../libs/config/index.js';
import { type Logger, lazyChildLogger } from '../../libs/log/index.js';
import type { DependencyCheck } from '../../libs/observability/index.js';
import { PORTAL_PATH, portalUsageSource } from '../../libs/portal/index.js';
import { BASE_PATH, requestIdFrom } from '../../libs/schemas/index.js';
import { registerAccessLog } from './plugins/access-log.js';
import { registerApiReference } from './plugins/api-reference.js';
import { registerAuthentication } from './plugins/authentication.js';
import { registerBodyParsing } from './plugins/body-parsing.js';
import { answerClientError, registerErrorHandling, sendError } from './plugins/errors.js';
import { registerInFlightTracking } from './plugins/in-flight.js';
import { collectRoutesForMethodNotAllowed } from './plugins/method-not-allowed.js';
import { registerOpenApi } from './plugins/openapi.js';
import { registerOperations } from './plugins/operations.js';
import { responseSerializerCompiler } from './plugins/serialization.js';
import { zodValidatorCompiler } from './plugins/validation.js';
import { publicRoutes } from './routes/index.js';
import { siteRootLlmsRoutes } from './routes/llms.js';
import { portalPageRoutes } from './routes/portal-pages.js';
import type { ApiDeps, ApiInstance } from './types.js';

/** The api's dependencies from its configuration, the platform and the usage core it serves through. */
export function apiDepsFrom(
  config: ApiConfig,
  platform: ApiDeps['platform'],
  usage: {
    ingest: ApiDeps['usageIngest'];
    readStores: ApiDeps['usageRead'];
    checks: () => DependencyCheck[];
  },
): ApiDeps {
  return {
    platform,
    bodyLimit: config.BODY_LIMIT_BYTES,
    invoiceCacheBytes: config.INVOICE_CACHE_MB * 1024 * 1024,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    publicUrl: config.PUBLIC_URL,
    webhookAllowLocalhost: config.WEBHOOK_ALLOW_LOCALHOST,
    webhookMaxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
    usageIngest: usage.ingest,
    usageRead: usage.readStores,
    portalUsage: portalUsageSource(platform.db, usage.readStores),
    extraReadinessChecks: usage.checks,
  };
}

/** Builds the public API (not listening); tests use `inject` or `listen` on it. */
export async function buildApiApp(deps: ApiDeps): Promise<ApiInstance> {
  const app = Fastify({
    loggerInstance: deps.platform.log as FastifyBaseLogger,
    // a request's logger is made when it first logs (at `warn` and above most never do)
    childLoggerFactory: (logger, bindings, options) =>
      lazyChildLogger(logger as Logger, bindings, options) as FastifyBaseLogger,
    // one access line per response instead (plugins/access-log.ts)
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.bodyLimit,
    requestIdHeader: false,
    genReqId: (request) => requestIdFrom(request.headers['x-request-id']),
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors: (error, request, reply) => sendError(error, request, reply),
    // while closing, requests still go through the hooks: in-flight.ts answers them 503
    return503OnClosing: false,
    clientErrorHandler: answerClientError,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  app.decorate('deps', deps);
  // first, so that every later hook's work (authentication included) counts as in flight
  registerInFlightTracking(app);
  registerBodyParsing(app);

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-ID', request.id);
    done();
  });
  registerErrorHandling(app);
  registerAuthentication(app);
  registerAccessLog(app);
  const addMethodNotAllowedRoutes = collectRoutesForMethodNotAllowed(app);
  registerOperations(app);
  await registerOpenApi(app);
  await app.register(publicRoutes, { prefix: BASE_PATH });
  await app.register(siteRootLlmsRoutes);
  await registerApiReference(app);
  await app.register(portalPageRoutes, { prefix: PORTAL_PATH });
  addMethodNotAllowedRoutes();
  return app;
}
