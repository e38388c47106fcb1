import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { ApiError } from '../../../libs/errors/index.js';
import type { ApiInstance } from '../types.js';

/**
 * Request bodies are JSON only: anything else is a 415, not a body handed to a route as a string.
 *
 * Many HTTP clients send `Content-Type: application/json` on every request, a DELETE or a body-less
 * POST included. On a route that declares no body or an optional one, an empty body is taken as no
 * body instead of Fastify's 400 for an empty JSON body; a route that requires one still answers that 400, and
 * everything else goes through Fastify's own JSON parser (prototype-poisoning checks included), once
 * the bytes are known to be UTF-8 (decoding others would put U+FFFD into stored names and keys).
 * Scoped parsers (the MCP route's) replace this one where they are added.
 */
export function registerBodyParsing(app: ApiInstance): void {
  app.removeContentTypeParser('text/plain');
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  app.addContentTypeParser<Buffer>('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (body.length === 0 && takesNoBody(request.routeOptions.schema?.body)) {
      done(null, undefined);
      return;
    }
    const encoded = ApiError.ofContentEncoding(request.headers['content-encoding']);
    if (encoded) {
      done(encoded);
      return;
    }
    if (!isUtf8(body)) {
      done(ApiError.invalidUtf8());
      return;
    }
    parseJson(request, body.toString('utf8'), done);
  });
}

/** A route without a body schema, or whose body schema accepts no body at all. */
function takesNoBody(schema: unknown): boolean {
  return schema === undefined || (schema instanceof z.ZodType && schema.safeParse(undefined).success);
}
