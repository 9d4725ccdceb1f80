// The page in a real browser (Debian's chromium via playwright-core) against a real gateway and a
// real daemon: pairing, two tabs and a terminal on one session, approvals following control, a
// daemon SIGKILLed mid-stream, a restarted gateway, and the refusals (Origin, Host, old codes, observers).
import http from 'node:http';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { envFor, readRecordFile, runCli, useTempHomes, waitFor } from '../helpers/processes.js';
import { CHROMIUM, TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux } from '../cli/tmux.js';
import { launchBrowser, waitEveryEventOnce, waitProbe } from './browser-helpers.js';
import { request, startWeb, stopWeb, type GatewayProc, stopAllWebs } from './gateway-helpers.js';

const skipChromium = skipWithout(CHROMIUM);
const newHome = useTempHomes('ab');
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(stopAllWebs);
let browser: Browser;

beforeAll(async () => {
  if (!skipChromium) browser = await launchBrowser(['--host-resolver-rules=MAP evil.example 127.0.0.1']);
});
afterAll(async () => {
  await browser?.close();
});

/**
 * A screenshot of the page, taken only when ASTRA_SCREENSHOT_DIR names a folder to put it in (a test's
 * home is removed when it ends, so one taken there would never be seen).
 */
async function shoot(page: Page, _home: string, name: string): Promise<void> {
  // To refresh docs/web-session.png: ASTRA_SCREENSHOT_DIR=/tmp/shots npx vitest run test/web/page.browser.test.ts
  const dir = process.env.ASTRA_SCREENSHOT_DIR;
  if (!dir) return;
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

async function openPaired(page: Page, link: string): Promise<void> {
  await page.goto(link);
  await page.waitForSelector('#new-session:not([disabled])', { timeout: 20_000 });
}

async function createSession(page: Page, title: string): Promise<string> {
  await page.fill('#new-title', title);
  await page.click('#new-session');
  await page.waitForFunction(() => ((globalThis as any).location.hash as string).startsWith('#/s/'), undefined, { timeout: 20_000 });
  await page.waitForSelector('#status[data-stream="live"]', { timeout: 20_000 });
  return decodeURIComponent(new URL(page.url()).hash.slice('#/s/'.length));
}

async function takeControl(page: Page): Promise<void> {
  await page.click('#take');
  await page.waitForSelector('#status-control[data-controlled="true"]', { timeout: 20_000 });
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('#input', text);
  await page.click('#send');
}

/** Every seq of the session, from session/read through the gateway. */
async function journalSeqs(g: GatewayProc, cookie: string, id: string): Promise<number[]> {
  const r = await request(g.port, 'GET', `/v1/sessions/${id}?limit=100000`, { cookie });
  return (r.body.events as { seq: number }[]).map((e) => e.seq);
}

async function cookieOf(page: Page, port: number): Promise<string> {
  const c = (await page.context().cookies(`http://127.0.0.1:${port}`)).find((x) => x.name === `astra_web_${port}`)!;
  expect(c.httpOnly).toBe(true);
  expect(c.sameSite).toBe('Strict');
  return `${c.name}=${c.value}`;
}

describe.skipIf(skipChromium)('the page in chromium', () => {
  it('a tab approves a command and its terminal shows it run; a second tab and a tmux attach observe; the terminal takes control and the buttons disappear', async () => {
    const home = newHome();
    const env = envFor(home);
    const g = await startWeb(env);
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const tab1 = await ctx.newPage();
    await openPaired(tab1, g.link);
    expect(await tab1.evaluate(() => (globalThis as any).document.cookie as string)).toBe(''); // HttpOnly: the page's script cannot read it
    const id = await createSession(tab1, 'browser tour');
    await takeControl(tab1);

    const tab2 = await ctx.newPage();
    await tab2.goto(`${g.origin}/#/s/${encodeURIComponent(id)}`);
    await tab2.waitForSelector('#status[data-stream="live"]');
    await tab2.waitForSelector('#status-control[data-controlled="false"]');
    expect(await tab2.textContent('#status-control')).toMatch(/controller: astra web tab/);

    const tmux = skipWithout(TMUX) ? undefined : new Tmux(env);
    try {
      // Not --observe: that is read-only (as tmux attach -r); a plain attach observes while the tab controls, and Ctrl-T takes over.
      tmux?.start('t', ['attach', id]);
      if (tmux) await tmux.waitStatus('t', /observing/);

      await send(tab1, 'echo from-the-browser');
      await tab1.waitForSelector('.card.approval button.approve', { timeout: 20_000 });
      await tab2.waitForSelector('.card.approval');
      expect(await tab2.locator('.card.approval button').count()).toBe(0);
      expect(await tab2.textContent('.card.approval .actions')).toMatch(/read-only/);
      await shoot(tab1, home, 'approval');
      await tab1.click('.card.approval button.approve');
      for (const t of [tab1, tab2]) await waitProbe(t, 'the command output in the terminal', (p) => /from-the-browser\r?\n/.test(p.terminal));
      await tab1.waitForSelector('.card.approval.resolved');
      if (tmux) await tmux.waitScreen('t', /from-the-browser/);
      await shoot(tab1, home, 'session');

      // A second prompt is pending in the tab when the terminal takes control: the buttons go.
      await send(tab1, 'echo second');
      await tab1.waitForSelector('.card.approval:not(.resolved) button.approve', { timeout: 20_000 });
      if (tmux) {
        tmux.key('t', 'C-t');
        await tmux.waitStatus('t', /you control this session/);
        await tab1.waitForSelector('#status-control[data-controlled="false"]', { timeout: 20_000 });
        await waitFor('the approval buttons to disappear', async () => (await tab1.locator('.card.approval:not(.resolved) button').count()) === 0, 20_000);
        expect(await tab1.textContent('.card.approval:not(.resolved) .actions')).toMatch(/read-only/);
        await shoot(tab1, home, 'terminal-took-control');
        // The daemon offers the pending prompt to the terminal, which answers it.
        await tmux.waitScreen('t', /\[y\/n\]/);
        tmux.type('t', 'y');
        await waitProbe(tab1, 'the second command to run', (p) => /second\r?\n/.test(p.terminal));
      }
      const cookie = await cookieOf(tab1, g.port);
      // The journal goes on after what was waited for (the command's and the turn's end), so each
      // tab is compared with the journal as it is then, until both agree.
      for (const t of [tab1, tab2]) await waitEveryEventOnce(t, () => journalSeqs(g, cookie, id));
    } finally {
      tmux?.destroy();
      await ctx.close();
    }
  });

  it('recovers from a daemon SIGKILLed mid-stream with every event exactly once, and from a gateway restart without a reload', async () => {
    const home = newHome();
    const env = envFor(home);
    let g = await startWeb(env);
    const ctx = await browser.newContext();
    const tab = await ctx.newPage();
    await openPaired(tab, g.link);
    const id = await createSession(tab, 'crash');
    const cookie = await cookieOf(tab, g.port);
    await takeControl(tab);
    await send(tab, 'for i in $(seq 1 40); do echo line$i; sleep 0.05; done');
    await tab.waitForSelector('.card.approval button.approve', { timeout: 20_000 });
    await tab.click('.card.approval button.approve');
    await waitProbe(tab, 'output to stream', (p) => /line5\r?\n/.test(p.terminal));
    const before = readRecordFile(home)!.pid;
    process.kill(before, 'SIGKILL');
    // The tab's client starts a new daemon, reclaims the lease and resubscribes from its last seq.
    await waitFor('a new daemon', () => {
      const r = readRecordFile(home);
      return r && r.pid !== before ? r : undefined;
    }, 30_000);
    // Meanwhile the gateway stayed up and told the page: the status bar said reconnecting, then live again.
    await waitProbe(tab, 'the status bar to say reconnecting for the daemon, then live', (p) => {
      const down = p.states.findIndex((x) => x.startsWith('reconnecting: the connection to the daemon dropped'));
      return down >= 0 && p.states.slice(down + 1).includes('live');
    }, 30_000);
    await waitFor('the interrupted turn to end', async () => (await request(g.port, 'GET', `/v1/sessions/${id}`, { cookie })).body.session?.state === 'idle', 30_000);
    await tab.waitForSelector('#status-control[data-controlled="true"]', { timeout: 30_000 });
    await send(tab, 'echo after-crash');
    await tab.waitForSelector('.card.approval:not(.resolved) button.approve', { timeout: 20_000 });
    await tab.click('.card.approval:not(.resolved) button.approve');
    await waitProbe(tab, 'the command after the crash', (p) => /after-crash\r?\n/.test(p.terminal), 30_000);
    // The output shows before the command's and the turn's end are journaled: compare until they agree.
    await waitEveryEventOnce(tab, () => journalSeqs(g, cookie, id));
    await shoot(tab, home, 'after-daemon-crash');

    // The gateway restarts on the same port: the page reconnects by itself and continues.
    expect(await stopWeb(g)).toBe(0);
    await waitProbe(tab, 'the page to notice', (p) => p.state === 'reconnecting' || p.state === 'connecting', 20_000);
    g = await startWeb(env, ['--port', String(g.port)]);
    await waitProbe(tab, 'the stream to be live again', (p) => p.state === 'live', 30_000);
    // The new gateway reclaimed the tab's lease with the token the old one kept: still in control, no grace to wait out.
    await tab.waitForSelector('#status-control[data-controlled="true"]', { timeout: 10_000 });
    expect(await tab.textContent('#status-control')).not.toMatch(/in grace/);
    // A terminal takes control over from the tab, then writes.
    expect((await runCli(['take', id], env)).code).toBe(0);
    const sent = await runCli(['send', id, 'echo from-the-cli', '--wait', '--yes'], env, 30_000);
    expect(sent.code, sent.stderr).toBe(0);
    await waitProbe(tab, 'the terminal command in the page', (p) => /from-the-cli\r?\n/.test(p.terminal), 30_000);
    await waitEveryEventOnce(tab, () => journalSeqs(g, cookie, id));
    await ctx.close();
  });

  it('refuses another origin, a rebinding Host, an old pairing code, and writes from an observer link', async () => {
    const home = newHome();
    const env = envFor(home);
    const g = await startWeb(env);
    const ctx = await browser.newContext();
    const tab = await ctx.newPage();
    await openPaired(tab, g.link);
    const id = await createSession(tab, 'refusals');
    await takeControl(tab);
    const cookie = await cookieOf(tab, g.port);

    // A page on another origin (same site: only the port differs, so the cookie IS sent) tries to
    // start a turn as this very tab (it even names the tab); only the Origin check stands in the way.
    const tabId = await tab.evaluate(() => (globalThis as any).sessionStorage.getItem('astra.tab') as string);
    const evil = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(`<script>
        window.result = fetch('http://127.0.0.1:${g.port}/v1/sessions/${id}/messages?tab=${tabId}', {
          method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
          body: JSON.stringify({ text: 'echo pwned', idempotencyKey: 'evil' }),
        }).then(() => 'sent', (e) => 'blocked: ' + e);
      </script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
    const evilOrigin = `http://127.0.0.1:${(evil.address() as { port: number }).port}`;
    try {
      const evilPage = await ctx.newPage();
      await evilPage.goto(`${evilOrigin}/`);
      // Whether the browser lets the page see the (refused) answer depends on CORP; the request went out.
      expect(await evilPage.evaluate(() => (globalThis as any).result as Promise<string>)).toMatch(/sent|blocked/);
      await evilPage.close();
    } finally {
      evil.close();
    }
    await waitFor('the gateway to refuse the request by its Origin', () => g.stderr().includes(`Origin check (Host 127.0.0.1:${g.port}, Origin ${evilOrigin}`));
    const read = await request(g.port, 'GET', `/v1/sessions/${id}?limit=100000`, { cookie });
    expect(read.body.events.map((e: { type: string }) => e.type)).not.toContain('turn.started');

    // DNS rebinding: evil.example resolves to 127.0.0.1, but the Host header gives it away.
    const rebound = await tab.context().newPage();
    const resp = await rebound.goto(`http://evil.example:${g.port}/`);
    expect(resp!.status()).toBe(421);
    expect(await rebound.textContent('body')).toMatch(/not this gateway/);
    await rebound.close();

    // The link already used pairs nobody.
    const other = await browser.newContext();
    const late = await other.newPage();
    await late.goto(g.link);
    await late.waitForSelector('#notice.error');
    expect(await late.textContent('#notice')).toMatch(/Pairing failed: .*astra web pair/);

    // An observer link watches but cannot write.
    const link = (await runCli(['web', 'pair', '--observe'], env)).stdout.trim();
    await late.goto('about:blank');
    await late.goto(link);
    await late.waitForSelector('#new-session[disabled]');
    await late.goto(`${g.origin}/#/s/${encodeURIComponent(id)}`);
    await late.waitForSelector('#status[data-stream="live"]');
    expect(await late.isDisabled('#take')).toBe(true);
    expect(await late.isDisabled('#send')).toBe(true);
    const tried = await late.evaluate(async (sid) => {
      const r = await fetch(`/v1/sessions/${sid}/lease`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ takeover: true }) });
      return { status: r.status, body: (await r.json()) as { error: { reason: string } } };
    }, id);
    expect(tried.status).toBe(403);
    expect(tried.body.error.reason).toBe('not_controller');
    await shoot(late, home, 'observer');
    await other.close();
    await ctx.close();
  });
});
