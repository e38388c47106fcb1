import {
  type Bindings,
  type ChildLoggerOptions,
  type DestinationStream,
  destination,
  type Logger,
  pino,
} from 'pino';

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

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * A request's child logger, made by pino on its first use. pino's `child()` runs every binding
 * through the redaction's wildcard paths, so making one per request costs each request an
 * allocation of its own even when nothing is logged at the level set (at `warn` and above the
 * access line, at `info`, is not written).
 * It logs exactly what `parent.child(bindings, options)` would.
 */
export function lazyChildLogger(
  parent: Logger,
  bindings: Bindings,
  options: ChildLoggerOptions = {},
): Logger {
  return new LazyChildLogger(parent, bindings, options) as unknown as Logger;
}

class LazyChildLogger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get logger(): Logger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  isLevelEnabled(level: string): boolean {
    // a level of its own (a route's logLevel) needs the child; else it takes the parent's
    return (this.made ?? (this.options.level ? this.logger : this.parent)).isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.logger.child(bindings, options);
  }
}

for (const level of LEVELS) {
  Object.defineProperty(LazyChildLogger.prototype, level, {
    value(this: LazyChildLogger, ...args: unknown[]) {
      if (!this.isLevelEnabled(level)) return;
      (this.logger[level] as (...a: unknown[]) => void)(...args);
    },
  });
}
