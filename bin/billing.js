#!/usr/bin/env node
// `npx billing <command>`: the operators' console (bin/console.ts, libs/console), package.json's
// `bin`. In a checkout with its dev dependencies the TypeScript source runs through tsx's loader
// (its public API), so the console is always the code at hand, never an older build. Where tsx is
// not installed (`npm ci --omit=dev`, the production image) the build under dist/ runs instead.
import { existsSync } from 'node:fs';

const tsx = await import('tsx/esm/api').catch((error) => {
  if (error?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
  throw error;
});
if (tsx) {
  tsx.register();
  await import('./console.ts');
} else {
  const built = new URL('../dist/bin/console.js', import.meta.url);
  if (!existsSync(built)) {
    process.stderr.write('billing: needs tsx (npm ci) or a build (npm run build); neither is here\n');
    process.exit(2);
  }
  await import(built.href);
}
