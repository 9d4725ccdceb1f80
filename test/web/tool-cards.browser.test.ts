// The chat engine's tool calls on the page, in real chromium against a real gateway, a real daemon
// and the fake model server (test/fixtures/model-server/) as a child process the daemon reaches
// through ASTRA_CHAT_BASE_URL: one card per call, its approval for the controlling tab only, the
// output the model was sent, and the final answer streaming in; an observer tab sees the same card.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { envFor, runCli, useTempHomes } from '../helpers/processes.js';

/** The daemon takes engine settings (the model server's URL) only from `astra daemon start`. */
async function startDaemonWith(env: NodeJS.ProcessEnv): Promise<void> {
  const r = await runCli(['daemon', 'start'], env);
  if (r.code !== 0) throw new Error(`astra daemon start failed: ${r.stderr}`);
}
import { CHROMIUM, skipWithout } from '../helpers/system-tools.js';
import { launchBrowser, newSessionInPage, takeControlInPage, waitEveryEventOnce } from './browser-helpers.js';
import { request, startWeb, stopAllWebs } from './gateway-helpers.js';

const skipChromium = skipWithout(CHROMIUM);
const newHome = useTempHomes('atc');
const children: ChildProcess[] = [];
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(async () => {
  await stopAllWebs();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
let browser: Browser;
beforeAll(async () => {
  if (!skipChromium) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

const CARD = '.card.tool[data-call-id="call_abc123"]';

/**
 * A tab that paired, created a session and took control of it: a chat session with model llama3.1
 * against a fake model server playing `script` when one is given, else a shell session.
 */
async function controllingTab(script?: string[]): Promise<{ ctx: BrowserContext; tab: Page }> {
  const env = script ? envFor(newHome(), { ASTRA_CHAT_BASE_URL: (await startModelServerProcess(script, children)).baseUrl }) : envFor(newHome());
  await startDaemonWith(env);
  const g = await startWeb(env);
  const ctx = await browser.newContext();
  try {
    const tab = await ctx.newPage();
    await tab.goto(g.link);
    await newSessionInPage(tab, script ? 'llama3.1' : undefined);
    await takeControlInPage(tab);
    return { ctx, tab };
  } catch (e) {
    await ctx.close();
    throw e;
  }
}

/**
 * A screenshot of the page, taken only when ASTRA_SCREENSHOT_DIR names a folder to put it in (a test's
 * home is removed when it ends, so one taken there would never be seen).
 */
async function shoot(page: Page, _home: string, name: string): Promise<void> {
  // docs/web-tool-card.png is tool-card-done.png: ASTRA_SCREENSHOT_DIR=/tmp/shots npx vitest run test/web/tool-cards.browser.test.ts
  const dir = process.env.ASTRA_SCREENSHOT_DIR;
  if (!dir) return;
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

/** Records every state of the page's assistant text (its class and text) as the DOM changes. */
async function watchAssistant(page: Page): Promise<void> {
  await page.evaluate(() => {
    const g = globalThis as any;
    g.assistantStates = [] as string[];
    new g.MutationObserver(() => {
      for (const m of g.document.querySelectorAll('.msg.assistant')) g.assistantStates.push(`${m.className}|${m.textContent}`);
    }).observe(g.document.getElementById('messages'), { subtree: true, childList: true, characterData: true, attributes: true });
  });
}

describe.skipIf(skipChromium)('tool cards in chromium', () => {
  it('a tab approves the model\'s shell call on its card, the card shows the output the model got, the answer streams in, and an observer tab sees the same card without buttons', async () => {
    const server = await startModelServerProcess(['tool-call', 'final-answer'], children);
    const home = newHome();
    const env = envFor(home, { ASTRA_CHAT_BASE_URL: server.baseUrl });
    await startDaemonWith(env);
    const g = await startWeb(env);
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    try {
      const tab1 = await ctx.newPage();
      await tab1.goto(g.link);
      await tab1.waitForSelector('#new-session:not([disabled])', { timeout: 20_000 });
      await tab1.fill('#new-title', 'chat tour');
      await tab1.selectOption('#new-engine', 'chat');
      await tab1.fill('#new-model', 'llama3.1');
      await tab1.click('#new-session');
      await tab1.waitForSelector('#status[data-stream="live"]', { timeout: 20_000 });
      const id = decodeURIComponent(new URL(tab1.url()).hash.slice('#/s/'.length));
      await takeControlInPage(tab1);
      expect(await tab1.getAttribute('#input', 'placeholder')).toMatch(/model/);

      const tab2 = await ctx.newPage();
      await tab2.goto(`${g.origin}/#/s/${encodeURIComponent(id)}`);
      await tab2.waitForSelector('#status-control[data-controlled="false"]', { timeout: 20_000 });

      await tab1.fill('#input', 'what is in this directory?');
      await tab1.click('#send');
      // The card: the tool, its command, waiting for the approval this tab may give.
      await tab1.waitForSelector(`${CARD}[data-status="pending"] button.approve`, { timeout: 20_000 });
      expect(await tab1.textContent(`${CARD} .tool-head`)).toBe('shell $ ls -1 in .');
      expect(await tab1.textContent(`${CARD} .tool-status`)).toBe('waiting for approval');
      expect(await tab1.textContent(`${CARD} .approval-meta`)).toMatch(/^revision 1 · expires \d/); // approvals expire after the daemon's default (1 h)
      expect(await tab1.locator('.card.approval').count()).toBe(0); // the card holds the approval; no second card
      // The observer: the same card, read-only.
      await tab2.waitForSelector(`${CARD}[data-status="pending"]`, { timeout: 20_000 });
      expect(await tab2.locator(`${CARD} button`).count()).toBe(0);
      expect(await tab2.textContent(`${CARD} .approval-actions .actions`)).toMatch(/waiting for astra web tab .* \(read-only\)/);
      await shoot(tab1, home, 'tool-card-pending');

      // An answer naming a stale revision: the daemon refuses it, the card says it expired.
      await tab1.evaluate((sel) => ((globalThis as any).document.querySelector(`${sel} .approval-actions`).dataset.revision = '2'), CARD);
      await tab1.click(`${CARD} button.approve`);
      await tab1.waitForSelector(`${CARD} .approval-actions[data-refused="approval_expired"]`, { timeout: 20_000 });
      expect(await tab1.textContent(`${CARD} .approval-actions .actions`)).toMatch(/^expired: .*revision 1, not 2/);
      expect(await tab1.locator(`${CARD} button`).count()).toBe(0);
      // Nothing was decided: a reload rebuilds the card from the journal with the prompt still open.
      await tab1.reload();
      await tab1.waitForSelector(`${CARD}[data-status="pending"] button.approve`, { timeout: 20_000 });
      await watchAssistant(tab1);

      await tab1.click(`${CARD} button.approve`);
      for (const t of [tab1, tab2]) await t.waitForSelector(`${CARD}[data-status="succeeded"]`, { timeout: 20_000 });
      const cookie = await cookieOf(tab1, g.port);
      const read = await request(g.port, 'GET', `/v1/sessions/${id}?limit=1000`, { cookie });
      const events = read.body.events as { seq: number; type: string; data: any }[];
      const result = events.find((e) => e.type === 'tool.result')!.data;
      expect(result).toMatchObject({ callId: 'call_abc123', status: 'succeeded', exitCode: 0 });
      for (const t of [tab1, tab2]) {
        expect(await t.textContent(`${CARD} .tool-status`)).toBe('succeeded · exit code 0');
        expect(await t.getAttribute(CARD, 'data-exit-code')).toBe('0');
        expect(await t.textContent(`${CARD} .tool-output`)).toBe(result.output);
        expect(await t.textContent(`${CARD} .approval-actions .actions`)).toMatch(/^approved by astra web tab /);
      }
      // The answer after the tool result, streamed: message.delta first (a streaming element), then settled.
      const answer = 'The directory has two files.';
      for (const t of [tab1, tab2]) await t.waitForSelector('.msg.assistant[data-finish-reason="stop"]', { timeout: 20_000 });
      expect(await tab1.textContent('.msg.assistant[data-finish-reason="stop"]')).toBe(answer);
      // The answer streamed after the journal was read above: read it again now that the turn has ended.
      for (const t of [tab1, tab2]) await t.waitForSelector('.msg.turn', { timeout: 20_000 });
      const after = (await request(g.port, 'GET', `/v1/sessions/${id}?limit=1000`, { cookie })).body.events as { seq: number; type: string; data: any }[];
      const firstDelta = after.find((e) => e.type === 'message.delta')!.data.text as string;
      const states = (await tab1.evaluate(() => (globalThis as any).assistantStates)) as string[];
      expect(states).toContain(`msg assistant streaming|${firstDelta}`);
      expect(states.at(-1)).toBe(`msg assistant|${answer}`);
      // Card before answer in the transcript; the tool-calls-only answer left no empty line.
      const order = await tab1.evaluate(() => [...(globalThis as any).document.querySelectorAll('#messages > *')].map((e: any) => e.className as string));
      expect(order).toEqual(['msg user', 'card tool', 'msg assistant', 'msg turn']);
      await shoot(tab1, home, 'tool-card-done');
      const journalSeqs = async () => ((await request(g.port, 'GET', `/v1/sessions/${id}?limit=1000`, { cookie })).body.events as { seq: number }[]).map((e) => e.seq);
      for (const t of [tab1, tab2]) await waitEveryEventOnce(t, journalSeqs);
    } finally {
      await ctx.close();
    }
  });

  it('collapses a long tool output, and shows a denied call as denied', async () => {
    const { ctx, tab } = await controllingTab(['tool-call-loud-command', 'final-answer', 'tool-call', 'final-answer']);
    try {
      await tab.fill('#input', 'make some noise');
      await tab.click('#send');
      await tab.waitForSelector('.card.tool[data-status="pending"] button.approve', { timeout: 20_000 });
      await tab.click('.card.tool button.approve');
      await tab.waitForSelector('.card.tool[data-status="succeeded"] details.tool-output-box', { timeout: 20_000 });
      expect(await tab.getAttribute('.card.tool details.tool-output-box', 'open')).toBeNull();
      expect(await tab.textContent('.card.tool details.tool-output-box summary')).toMatch(/^output sent to the model \(\d+ lines, \d+ characters\)$/);
      expect(await tab.isVisible('.card.tool details.tool-output-box pre')).toBe(false);
      await tab.click('.card.tool details.tool-output-box summary');
      expect(await tab.isVisible('.card.tool details.tool-output-box pre')).toBe(true);
      await tab.waitForSelector('.msg.turn', { timeout: 20_000 });

      await tab.fill('#input', 'and now?');
      await tab.click('#send');
      await tab.waitForSelector(`${CARD}[data-status="pending"] button.deny`, { timeout: 20_000 });
      await tab.click(`${CARD} button.deny`);
      await tab.waitForSelector(`${CARD}[data-status="denied"]`, { timeout: 20_000 });
      expect(await tab.textContent(`${CARD} .tool-status`)).toBe('denied');
      expect(await tab.textContent(`${CARD} .tool-output`)).toBe('[not run: the user denied this command]');
    } finally {
      await ctx.close();
    }
  });
});

describe.skipIf(skipChromium)('the end of a turn in chromium', () => {
  it("says why a turn ended as it did: a shell command denied on the page ends 'turn cancelled (denied: …)'", async () => {
    const { ctx, tab } = await controllingTab();
    try {
      await tab.fill('#input', 'echo never');
      await tab.click('#send');
      await tab.waitForSelector('.card.approval button.deny', { timeout: 20_000 });
      await tab.click('.card.approval button.deny');
      await tab.waitForSelector('.msg.turn[data-reason]', { timeout: 20_000 });
      expect(await tab.getAttribute('.msg.turn', 'data-reason')).toMatch(/^denied: /);
      expect(await tab.textContent('.msg.turn')).toMatch(/^turn cancelled \(denied: .+\)$/);
    } finally {
      await ctx.close();
    }
  });
});

describe.skipIf(skipChromium)('tool cards in chromium: several calls in one answer', () => {
  it('gives each call its own card, and each approval and result goes to its own call, in order', async () => {
    const { ctx, tab } = await controllingTab(['several-tool-calls', 'final-answer']);
    try {
      await tab.fill('#input', 'two things');
      await tab.click('#send');
      const one = '.card.tool[data-call-id="call_one"]';
      const two = '.card.tool[data-call-id="call_two"]';
      // Both calls are announced at once; the first is asked about, the second waits its turn.
      await tab.waitForSelector(`${one}[data-status="pending"] button.approve`, { timeout: 20_000 });
      expect(await tab.getAttribute(two, 'data-status')).toBe('called');
      expect(await tab.locator(`${two} button`).count()).toBe(0);
      await tab.click(`${one} button.approve`);
      await tab.waitForSelector(`${two}[data-status="pending"] button.approve`, { timeout: 20_000 });
      expect(await tab.getAttribute(one, 'data-status')).toBe('succeeded');
      await tab.click(`${two} button.approve`);
      await tab.waitForSelector(`${two}[data-status="failed"]`, { timeout: 20_000 });
      expect(await tab.textContent(`${one} .tool-status`)).toBe('succeeded · exit code 0');
      expect(await tab.textContent(`${two} .tool-status`)).toBe('failed · exit code 3');
      expect(await tab.textContent(`${one} .tool-output`)).toMatch(/^one\n/);
      expect(await tab.textContent(`${two} .tool-output`)).toMatch(/two/);
      expect(await tab.textContent(`${one} .approval-actions .actions`)).toMatch(/^approved/);
      expect(await tab.textContent(`${two} .approval-actions .actions`)).toMatch(/^approved/);
      await tab.waitForSelector('.msg.assistant[data-finish-reason="stop"]', { timeout: 20_000 });
    } finally {
      await ctx.close();
    }
  });
});

async function cookieOf(page: Page, port: number): Promise<string> {
  const c = (await page.context().cookies(`http://127.0.0.1:${port}`)).find((x) => x.name === `astra_web_${port}`)!;
  return `${c.name}=${c.value}`;
}
