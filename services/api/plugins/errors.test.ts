import { describe, expect, it } from 'vitest';
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
});
