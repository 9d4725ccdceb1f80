// A browser tab that goes away gives control back (docs/http.md §Tabs), in a real chromium against a
// real gateway and daemon: closed, its pagehide beacon releases the lease at once; killed (no beacon),
// its streams end and the lease is free after the normal grace — not after the 2-minute tab idle time.
// A socket client (AstraClient, no takeover) is who wants control.
import { chromium, type Browser, type BrowserServer } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AstraClient } from '../../client/index.js';
import { isAstraError } from '../../protocol/index.js';
import { envFor, runCli, useTempHomes, waitFor } from '../helpers/processes.js';
import { CHROMIUM, CHROMIUM_PATH, skipWithout } from '../helpers/system-tools.js';
import { CHROMIUM_FLAGS, launchBrowser, newSessionInPage, takeControlInPage } from './browser-helpers.js';
import { startWeb, stopAllWebs } from './gateway-helpers.js';

const skipChromium = skipWithout(CHROMIUM);
const newHome = useTempHomes('abr');
afterEach(stopAllWebs);
let browser: Browser;
const clients: AstraClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

beforeAll(async () => {
  if (!skipChromium) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

/** A terminal-like client that wants control without taking it over: granted only when the lease is free. */
async function tryAcquire(client: AstraClient, id: string): Promise<boolean> {
  try {
    await client.acquireController(id);
    return true;
  } catch (e) {
    if (isAstraError(e, 'lease_held')) return false;
    throw e;
  }
}

/** The daemon, started first with the test's lease grace (a gateway's tab would otherwise start it). */
async function setup(graceMs: number): Promise<{ env: NodeJS.ProcessEnv; client: AstraClient }> {
  const env = envFor(newHome(), { ASTRA_LEASE_GRACE_MS: String(graceMs) });
  const started = await runCli(['daemon', 'start'], env);
  expect(started.code, started.stderr).toBe(0);
  const client = await AstraClient.connect({ clientName: 'terminal', env, reconnect: false });
  clients.push(client);
  return { env, client };
}

describe.skipIf(skipChromium)('a tab that goes away gives control back', () => {
  it('a closed tab releases control with its pagehide beacon: another client takes it at once, with no grace to wait out', async () => {
    // A grace longer than the test's wait: control comes free only if the tab really released it.
    const { env, client } = await setup(600_000);
    const g = await startWeb(env);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    await page.goto(g.link);
    const id = await newSessionInPage(page);
    await takeControlInPage(page);
    expect(await tryAcquire(client, id)).toBe(false);

    await page.close({ runBeforeUnload: true });
    await waitFor('the lease to be free', () => tryAcquire(client, id), 30_000);
    // Released, not in grace: the session names the terminal as its controller now.
    const { session } = await client.session.read({ sessionId: id, limit: 1 });
    expect(session.controller).toMatchObject({ clientName: 'terminal' });
    expect(g.stderr()).not.toMatch(/internal error/);
    await ctx.close();
  });

  it('a killed browser (no beacon) loses control after the normal grace once its streams end, not after the tab idle time', async () => {
    const { env, client } = await setup(3_000);
    const g = await startWeb(env);
    // A browser of its own, in its own process group, so that it can be killed outright.
    const server: BrowserServer = await chromium.launchServer({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_FLAGS, timeout: 30_000 });
    const pid = server.process().pid!;
    try {
      const killable = await chromium.connect(server.wsEndpoint());
      const page = await (await killable.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      await page.goto(g.link);
      const id = await newSessionInPage(page);
      await takeControlInPage(page);
      expect(await tryAcquire(client, id)).toBe(false);

      try {
        process.kill(-pid, 'SIGKILL'); // the browser and its helper processes
      } catch {
        process.kill(pid, 'SIGKILL');
      }
      // The tab idle time is 2 minutes; this waits far less than that.
      await waitFor('the lease to be free after the grace', () => tryAcquire(client, id), 45_000);
    } finally {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await server.close().catch(() => undefined);
    }
  });
});
