import { describe, expect, it } from 'vitest';
import { DependencyUnavailableError } from '../../../libs/dependency-guard/index.js';
import { toApiError } from './errors.js';

describe('toApiError', () => {
  it('answers 503 for a database that cannot be reached or stopped answering, 500 for anything else', () => {
    for (const message of [
      'Connection terminated unexpectedly',
      'timeout exceeded when trying to connect',
      'Query read timeout',
    ]) {
      expect(toApiError(new Error(message))?.code, message).toBe('SERVICE_UNAVAILABLE');
    }
    expect(toApiError(Object.assign(new Error('terminating connection'), { code: '57P01' }))?.code).toBe(
      'SERVICE_UNAVAILABLE',
    );
    expect(toApiError(new Error('something else'))).toBeUndefined();
  });

  it('names a dependency that is down in words a client reads, with Retry-After', () => {
    const error = toApiError(new DependencyUnavailableError('kafka', 'connection refused', 'The usage log'));
    expect(error).toMatchObject({
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      message: 'The usage log is unavailable; retry shortly.',
      headers: { 'Retry-After': '1' },
    });
  });
});
