// An ACP agent's session on the page, in real chromium against a real gateway and a real daemon
// running the acp engine's fake agent (test/engines/acp/fixtures/fake-agent.mjs): its thought, its
// plan, a tool call's diff and a permission request with the agent's options render as DOM; clicking
// an option answers with its optionId, which approval.resolved in the journal carries; no CSP error.
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { envFor, ROOT, runCli, useTempHomes } from '../helpers/processes.js';
import { CHROMIUM, skipWithout } from '../helpers/system-tools.js';
import { launchBrowser, takeControlInPage } from './browser-helpers.js';
import { startWeb, stopAllWebs } from './gateway-helpers.js';

const AGENT = path.join(ROOT, 'test', 'engines', 'acp', 'fixtures', 'fake-agent.mjs');
const skipChromium = skipWithout(CHROMIUM);
const newHome = useTempHomes('aap');
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(async () => {
  await stopAllWebs();
});
let browser: Browser;
beforeAll(async () => {
  if (!skipChromium) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

/** A JSON request from the page itself (its cookie, its Origin, its tab id). */
async function pageFetch(tab: Page, method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  return tab.evaluate(
    async ({ method, url, body }) => {
      const r = await fetch(url, {
        method,
        headers: { 'Content-Type': 'application/json', 'X-Astra-Tab': sessionStorage.getItem('astra.tab') ?? '' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: r.status, body: await r.json() };
    },
    { method, url, body },
  );
}

async function send(tab: Page, text: string): Promise<void> {
  await tab.fill('#input', text);
  await tab.click('#send');
}

describe.skipIf(skipChromium)('an ACP agent on the page', () => {
  it('renders a thought, a plan, a diff and an approval with the agent\'s options; an option answers with its optionId', async () => {
    const env = envFor(newHome(), { ASTRA_ACP_START_TIMEOUT_MS: '15000' });
    const started = await runCli(['daemon', 'start'], env);
    expect(started.code, started.stderr).toBe(0);
    const g = await startWeb(env);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const tab = await ctx.newPage();
      const logs: string[] = [];
      tab.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
      tab.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
      await tab.goto(g.link);
      await tab.waitForSelector('#new-session:not([disabled])', { timeout: 20_000 });
      const loaded = logs.length; // what the page logs as it loads is not this test's concern
      const created = await pageFetch(tab, 'POST', '/v1/sessions', {
        title: 'acp',
        engine: 'acp',
        approvalPolicy: 'ask',
        cwd: ROOT,
        engineOptions: { command: process.execPath, args: [AGENT] },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.session.id as string;
      await tab.evaluate((id) => (location.hash = `#/s/${encodeURIComponent(id)}`), id);
      await tab.waitForSelector('#status[data-stream="live"]', { timeout: 20_000 });
      await takeControlInPage(tab);

      // The `rich` turn: a thought, a plan, an edit whose update carries a diff of a.txt ("old" -> "xxxx").
      await send(tab, 'rich 4');
      await tab.waitForSelector('.msg.assistant[data-finish-reason]', { timeout: 30_000 });
      const thought = tab.locator('details.msg.thought');
      expect(await thought.count()).toBe(1);
      expect(await thought.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
      expect(await thought.locator('.thought-text').textContent()).toBe('thinking…');
      expect(await thought.evaluate((d) => getComputedStyle(d).color)).toBe('rgb(136, 136, 136)');
      const entry = tab.locator('.card.plan li.plan-entry');
      expect(await entry.count()).toBe(1);
      expect(await entry.getAttribute('data-status')).toBe('in_progress');
      expect(await entry.locator('.plan-content').textContent()).toBe('edit a.txt');
      expect(await entry.locator('input[type=checkbox]').evaluate((b) => (b as HTMLInputElement).indeterminate)).toBe(true);
      const card = tab.locator('.card.tool[data-call-id="t1"]');
      expect(await card.getAttribute('data-status')).toBe('completed');
      expect(await card.locator('.tool-title').textContent()).toBe('Edit a.txt');
      expect(await card.locator('.tool-location').textContent()).toBe('/w/a.txt:1');
      const diff = card.locator('.diff[data-path="/w/a.txt"]');
      expect(await diff.locator('.diff-line').allTextContents()).toEqual(['- old\n', '+ xxxx\n']);
      expect(await diff.locator('.diff-head').textContent()).toBe('/w/a.txt +1 -1');
      expect(await diff.locator('.diff-line.add').evaluate((l) => getComputedStyle(l).backgroundColor)).toBe('rgb(230, 255, 236)');
      expect(await diff.locator('.diff-line.del').evaluate((l) => getComputedStyle(l).backgroundColor)).toBe('rgb(255, 235, 233)');
      // The thought opens when clicked.
      await thought.locator('summary').click();
      expect(await thought.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);

      // The `permission` turn: the agent's options are the buttons; "Always allow" answers with its id.
      await send(tab, 'permission');
      const buttons = tab.locator('.card.tool[data-call-id="p1"] .approval-actions button');
      await buttons.first().waitFor({ timeout: 30_000 });
      expect(await buttons.allTextContents()).toEqual(['Allow once', 'Always allow', 'Reject']);
      expect(await buttons.evaluateAll((bs) => bs.map((b) => (b as HTMLElement).dataset.optionId))).toEqual(['once', 'always', 'no']);
      // An option the approval does not have, or one whose kind disagrees with the decision, is refused.
      const approvalId = await tab.getAttribute('.card.tool[data-call-id="p1"] .approval-actions', 'data-approval-id');
      for (const [optionId, decision] of [['bogus', 'approve'], ['no', 'approve']]) {
        const r = await pageFetch(tab, 'POST', `/v1/approvals/${approvalId}`, { sessionId: id, decision, revision: 1, optionId });
        expect([r.status, r.body.error?.reason]).toEqual([400, 'invalid_params']);
      }
      await tab.click('.card.tool[data-call-id="p1"] button[data-option-id="always"]');
      await tab.waitForSelector('.card.tool[data-call-id="p1"] .approval-actions[data-option-id="always"]', { timeout: 20_000 });
      expect(await tab.textContent('.card.tool[data-call-id="p1"] .approval-actions .actions')).toMatch(/^approved: Always allow by /);
      await tab.waitForFunction(() => Array.from(document.querySelectorAll('.msg.assistant')).some((m) => m.textContent === 'chose always'), undefined, { timeout: 20_000 });

      const journal = await pageFetch(tab, 'GET', `/v1/sessions/${encodeURIComponent(id)}?limit=1000`);
      const resolved = (journal.body.events as { type: string; data: Record<string, unknown> }[]).filter((e) => e.type === 'approval.resolved');
      expect(resolved.map((e) => [e.data.decision, e.data.optionId])).toEqual([['approve', 'always']]);
      // The two refusals above are the only errors logged (chromium logs each 400 it was answered).
      const refused = 'error: Failed to load resource: the server responded with a status of 400 (Bad Request)';
      expect(logs.slice(loaded).filter((l) => /Content Security Policy|pageerror|^error/i.test(l))).toEqual([refused, refused]);
      if (process.env.ASTRA_SCREENSHOT_DIR) await tab.screenshot({ path: path.join(process.env.ASTRA_SCREENSHOT_DIR, 'acp-page.png'), fullPage: true });
    } finally {
      await ctx.close();
      await runCli(['daemon', 'stop'], env);
    }
  }, 90_000);
});
