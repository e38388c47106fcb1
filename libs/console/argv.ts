export interface ParsedArgv {
  words: string[];
  flags: Record<string, string | true>;
  /** Flags given more than once: refused, since keeping either value would be a guess. */
  repeated: string[];
}

/**
 * Splits argv into command words and `--kebab-case` flags. `--flag value` and `--flag=value`
 * take a value; a flag followed by another flag (or nothing) is boolean true.
 */
export function parseArgv(argv: string[]): ParsedArgv {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  const repeated: string[] = [];
  const set = (name: string, value: string | true) => {
    if (Object.hasOwn(flags, name) && !repeated.includes(name)) repeated.push(name);
    flags[name] = value;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      words.push(arg);
      continue;
    }
    const body = arg.slice(2);
    const eq = body.indexOf('=');
    if (eq >= 0) {
      set(body.slice(0, eq), body.slice(eq + 1));
      continue;
    }
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      set(body, next);
      i++;
    } else {
      set(body, true);
    }
  }
  return { words, flags, repeated };
}
