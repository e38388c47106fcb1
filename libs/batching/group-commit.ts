import { Batcher, type BatcherOptions } from './batcher.js';

/**
 * `run` for one item, with the calls of concurrent callers sharing runs (a Batcher): one statement
 * and one commit serve many writes. A run over several items that throws is made again for each
 * item alone, so an error reaches only the caller whose item caused it.
 */
export function groupCommit<I, O>(
  run: (items: I[]) => Promise<readonly O[]>,
  options: BatcherOptions<I>,
): (item: I) => Promise<O> {
  type Settled = { value: O } | { error: unknown };
  const alone = (item: I): Promise<Settled> =>
    run([item]).then(
      ([value]) => ({ value: value as O }),
      (error: unknown) => ({ error }),
    );
  const batcher = new Batcher<I, Settled>(async (items) => {
    if (items.length === 1) return [await alone(items[0]!)];
    try {
      return (await run(items)).map((value) => ({ value }));
    } catch {
      return Promise.all(items.map(alone));
    }
  }, options);
  return async (item) => {
    const settled = await batcher.submit(item);
    if ('error' in settled) throw settled.error;
    return settled.value;
  };
}
