import { appendFileSync } from 'node:fs';
import { destination } from 'pino';
import { createLogger, type Logger } from '../../libs/log/index.js';
import { testServices } from './services.js';

/**
 * Every in-process logger of the run writes, at debug level, to one file; every API key and
 * signing secret that a test creates or receives is recorded beside it. At the end of the run the
 * global teardown greps the log for each of them (test/setup/global-setup.ts).
 */
export function runLogger(service = 'test'): Logger {
  const { runLogFile } = testServices();
  return createLogger({
    level: 'debug',
    service,
    destination: destination({ dest: runLogFile, append: true, sync: true }),
  });
}

// signing secrets: standard base64 now, base64url before; portal session and hosted-invoice tokens
const CREDENTIAL =
  /\b(?:sk_(?:live|test)_[A-Za-z0-9_-]{43}\b|whsec_[A-Za-z0-9+/]{43}=|whsec_[A-Za-z0-9_-]{43}\b|pst_[A-Za-z0-9_-]{43}\b|hinv_[A-Za-z0-9_-]{64}\b)/g;

/** Records each key or signing secret found in `text` as one that must never be logged. */
export function recordCredentials(text: string): void {
  const found = text.match(CREDENTIAL);
  if (found?.length) appendFileSync(testServices().runSecretsFile, `${found.join('\n')}\n`);
}

export { CREDENTIAL };
