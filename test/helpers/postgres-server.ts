import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Database, migrate } from '../../libs/db/index.js';
import { freeTcpPort } from './redis-server.js';

/**
 * A Postgres server of the test's own (Debian's binaries, a fresh cluster in a temporary
 * directory, migrated), that the test may freeze: the run's shared Postgres is never stopped.
 */
export interface OwnPostgresServer {
  url: string;
  /** Freezes the server and every backend (SIGSTOP): connections stay open and nothing answers. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export async function startOwnPostgresServer(): Promise<OwnPostgresServer> {
  const bin = await postgresBin();
  const directory = await mkdtemp(path.join(tmpdir(), 'own-postgres-'));
  await chmod(directory, 0o777);
  const data = path.join(directory, 'data');
  // Postgres refuses to run as root: as its own Debian user when the tests run as root.
  const user = process.getuid?.() === 0 ? postgresUser() : undefined;
  execFileSync(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'], {
    stdio: 'ignore',
    ...user,
  });
  const port = await freeTcpPort();
  const child: ChildProcess = spawn(
    path.join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', directory, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    { stdio: ['ignore', 'ignore', 'pipe'], ...user },
  );
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const db = new Database(url, { poolSize: 1 });
  try {
    for (let tries = 0; ; tries++) {
      try {
        await db.query('SELECT 1');
        break;
      } catch {
        if (tries > 100 || child.exitCode !== null) throw new Error(`own Postgres did not start: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    await migrate(db);
  } finally {
    await db.close();
  }
  /** The postmaster and its children: a frozen server is all of them, as a frozen VM would be. */
  const processes = () => {
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(child.pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter(Boolean);
    return [child.pid!, ...children];
  };
  return {
    url,
    pause: () => {
      for (const pid of processes()) process.kill(pid, 'SIGSTOP');
    },
    resume: () => {
      for (const pid of processes()) process.kill(pid, 'SIGCONT');
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        for (const pid of processes()) process.kill(pid, 'SIGCONT');
        child.kill('SIGINT'); // fast shutdown
        await exited;
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}

async function postgresBin(): Promise<string> {
  const versions = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(b) - Number(a));
  if (!versions.length)
    throw new Error('no Postgres binaries under /usr/lib/postgresql (npm test installs them)');
  return `/usr/lib/postgresql/${versions[0]}/bin`;
}

function postgresUser(): { uid: number; gid: number } {
  const [uid, gid] = ['-u', '-g'].map((flag) =>
    Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim()),
  );
  return { uid: uid!, gid: gid! };
}
