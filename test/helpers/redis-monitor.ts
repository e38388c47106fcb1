import net from 'node:net';

/**
 * Redis' MONITOR on a plain socket: `onCommand` gets each command's arguments (the command name
 * first) as Redis reports them. ioredis' own monitor() can throw "Command queue state error" out
 * of its socket handler when lines arrive while it switches modes, failing a run with an uncaught
 * exception; this reads the stream itself. Resolves once Redis acknowledged MONITOR.
 */
export async function monitorRedis(
  redisUrl: string,
  onCommand: (args: string[]) => void,
): Promise<{ close(): void }> {
  const url = new URL(redisUrl);
  const socket = net.connect(Number(url.port || 6379), url.hostname);
  socket.setEncoding('utf8');
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () => socket.write('MONITOR\r\n'));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let end = buffered.indexOf('\r\n');
      while (end >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (line === '+OK') resolve();
        else if (line.startsWith('+')) onCommand(argumentsOf(line));
        end = buffered.indexOf('\r\n');
      }
    });
  });
  socket.on('error', () => {});
  return { close: () => socket.destroy() };
}

/** `+<time> [<db> <client>] "arg" "arg"...`: the quoted arguments, unescaped. */
function argumentsOf(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((match) =>
    match[1]!.replace(/\\(x[0-9a-f]{2}|.)/g, (_, escaped: string) =>
      escaped.length === 3 ? String.fromCharCode(Number.parseInt(escaped.slice(1), 16)) : escaped,
    ),
  );
}
