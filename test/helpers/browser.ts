import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * Debian's chromium (installed by deploy/dev-services), driven by playwright-core, which never
 * downloads a browser of its own; a fresh, empty profile per launch, and the flags that keep it
 * off the network (this machine refuses every connection outside).
 */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(
  options: { acceptDownloads?: boolean; viewport?: { width: number; height: number } } = {},
): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'test-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    acceptDownloads: options.acceptDownloads ?? false,
    viewport: options.viewport ?? { width: 1100, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A page that records every console error or warning, uncaught exception, failed request and
 * error status; `ignoreFailed` names requests that end early on purpose (a download).
 */
export async function watchedPage(
  context: BrowserContext,
  options: { ignoreFailed?: (url: string) => boolean } = {},
): Promise<{ page: Page; problems: string[]; requested: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  const requested: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning')
      problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('request', (request) => requested.push(request.url()));
  page.on('requestfailed', (request) => {
    if (!options.ignoreFailed?.(request.url())) problems.push(`failed: ${request.url()}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
  });
  return { page, problems, requested };
}
