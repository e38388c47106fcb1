import type { Database } from '../db/index.js';
import type { Redis } from '../redis/index.js';

/** One dependency a process needs to serve: `probe` resolves when it is reachable. */
export interface DependencyCheck {
  name: string;
  probe(): Promise<unknown>;
}

export interface Readiness {
  ready: boolean;
  checks: Record<string, { status: 'ok' | 'down'; latency_ms: number; error?: string }>;
}

const PROBE_TIMEOUT_MS = 2000;

/** Runs every check at once, each bounded by a timeout, so one hung dependency cannot hang /readyz. */
export async function checkReadiness(checks: readonly DependencyCheck[]): Promise<Readiness> {
  const results = await Promise.all(
    checks.map(async ({ name, probe }) => {
      const started = performance.now();
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          probe(),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
              PROBE_TIMEOUT_MS,
            );
          }),
        ]);
        return [name, { status: 'ok' as const, latency_ms: elapsed(started) }] as const;
      } catch (error) {
        // The message of a driver error names the host and the failure, never a credential.
        const message = (error as Error).message || String(error);
        return [name, { status: 'down' as const, latency_ms: elapsed(started), error: message }] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return { ready: results.every(([, r]) => r.status === 'ok'), checks: Object.fromEntries(results) };
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}

export function databaseCheck(db: Database): DependencyCheck {
  return { name: 'database', probe: () => db.query('SELECT 1') };
}

export function redisCheck(redis: Redis): DependencyCheck {
  return { name: 'redis', probe: () => redis.ping() };
}

/**
 * ClickHouse answers `GET /ping` with "Ok." when it serves queries, without authentication. The
 * user and password of CLICKHOUSE_URL are left out: fetch refuses a URL with credentials, and its
 * error would show them on /readyz.
 */
export function clickhouseCheck(url: string): DependencyCheck {
  const ping = new URL('/ping', url);
  ping.username = '';
  ping.password = '';
  return {
    name: 'clickhouse',
    async probe() {
      const response = await fetch(ping, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      if (!response.ok) throw new Error(`ClickHouse /ping answered HTTP ${response.status}`);
    },
  };
}
