import type { FastifyRequest } from 'fastify';

/** scheme://host[:port] clients reach us at: PUBLIC_BASE_URL when set, else what the request used. */
export function baseUrlOf(request: FastifyRequest): string {
  const configured = request.server.deps.publicBaseUrl;
  if (configured) return configured.replace(/\/+$/, '');
  return `${request.protocol}://${request.host}`;
}
