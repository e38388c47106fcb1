import { type DestinationStream, destination, type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/**
 * Paths that could carry a credential. Request logs never include headers or bodies in the first
 * place (see the api and ingest request serializers); this list is the second line of defence for
 * objects logged by hand.
 */
const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'api_key',
  'apiKey',
  'secret',
  'signing_secret',
  'previous_secret',
  'password',
  '*.authorization',
  '*.api_key',
  '*.apiKey',
  '*.secret',
  '*.previous_secret',
  '*.password',
];

/** `stderr`: for a command whose stdout is its answer (the console); stdout otherwise. */
export function createLogger(options: {
  level: string;
  service: string;
  destination?: DestinationStream | 'stderr';
}): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination === 'stderr' ? destination(2) : options.destination,
  );
}
