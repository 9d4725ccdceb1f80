// The page at 1280×800 in a real chromium against a real gateway and daemon, after the kind of use
// that used to push things out of sight: the status bar stays in the window (also when it says
// "reconnecting…"), each approval card's buttons are whole and visible, the terminal panel shows the
// current turn (also after a full-screen program of an earlier turn was left on the alternate
// screen), and loading the page logs no Content-Security-Policy error. A screenshot goes to
// ASTRA_SCREENSHOT_DIR (default: the test's home).
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { envFor, useTempHomes, waitFor } from '../helpers/processes.js';
import { CHROMIUM, skipWithout } from '../helpers/system-tools.js';
import { launchBrowser, newSessionInPage, takeControlInPage, waitProbe } from './browser-helpers.js';
import { startWeb, stopAllWebs, stopWeb } from './gateway-helpers.js';

const skipChromium = skipWithout(CHROMIUM);
const newHome = useTempHomes('abl');
afterEach(stopAllWebs);
let browser: Browser;

beforeAll(async () => {
  if (!skipChromium) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

const VIEWPORT = { width: 1280, height: 800 };

/** The element's box lies whole inside the window (and inside `within`'s box, when given). */
async function expectWhollyVisible(what: string, target: Locator, within?: Locator): Promise<void> {
  // The answer area is repainted when control is refreshed: ask again if the element was replaced meanwhile.
  const box = await waitFor(`${what} to have a box`, async () => (await target.boundingBox({ timeout: 5_000 }).catch(() => null)) ?? undefined, 15_000);
  const frames = [{ x: 0, y: 0, width: VIEWPORT.width, height: VIEWPORT.height }];
  if (within) frames.push((await within.boundingBox())!);
  for (const f of frames) {
    expect(box.x, `${what}: left edge`).toBeGreaterThanOrEqual(f.x - 0.5);
    expect(box.y, `${what}: top edge`).toBeGreaterThanOrEqual(f.y - 0.5);
    expect(box.x + box.width, `${what}: right edge`).toBeLessThanOrEqual(f.x + f.width + 0.5);
    expect(box.y + box.height, `${what}: bottom edge`).toBeLessThanOrEqual(f.y + f.height + 0.5);
  }
}

async function visibleTerminalRows(page: Page): Promise<string[]> {
  return page.evaluate(() => (globalThis as unknown as { astra: { terminalVisible(): string[] } }).astra.terminalVisible());
}

/** Sends a command, checks its approval card's buttons are wholly visible, approves it, and waits for its end. */
async function runTurn(page: Page, command: string, done: RegExp, n: number): Promise<void> {
  await page.fill('#input', command);
  await page.click('#send');
  const card = page.locator('.card.approval:not(.resolved)').last();
  await card.locator('button.approve').waitFor({ timeout: 20_000 });
  for (const b of ['approve', 'deny']) await expectWhollyVisible(`turn ${n}: the ${b} button`, card.locator(`button.${b}`), page.locator('#history'));
  await card.locator('button.approve').click();
  await waitProbe(page, `turn ${n}'s output`, (p) => done.test(p.terminal), 30_000);
  await page.waitForSelector(`#terminal-caption:text-matches("exit")`, { timeout: 20_000 });
}

describe.skipIf(skipChromium)('the page at 1280×800', () => {
  it('keeps the status bar, the approval buttons and the current turn in view, and logs no CSP error', async () => {
    const home = newHome();
    const g = await startWeb(envFor(home));
    const ctx = await browser.newContext({ viewport: VIEWPORT });
    const page = await ctx.newPage();
    const console: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') console.push(m.text());
    });
    try {
      await page.goto(g.link);
      await newSessionInPage(page);
      await takeControlInPage(page);

      // Enough turns that cards and messages outgrow the window; one fills the terminal, one
      // leaves a full-screen program's alternate screen behind.
      await runTurn(page, 'seq 1 60', /\n60\r?\n/, 1);
      for (let n = 2; n <= 7; n++) await runTurn(page, `echo turn-${n}`, new RegExp(`turn-${n}\\r?\\n[^]*\\[exit 0\\]`), n);
      await runTurn(page, "printf '\\033[?1049h\\033[2J\\033[Hfull-screen-left-over'", /full-screen-left-over/, 8);
      await runTurn(page, 'echo the-current-turn', /the-current-turn\r?\n/, 9);

      await expectWhollyVisible('the status bar', page.locator('#status'));
      await expectWhollyVisible('the terminal panel', page.locator('#terminal'));
      const rows = await visibleTerminalRows(page);
      expect(rows.some((r) => r.includes('$ echo the-current-turn')), rows.join('\n')).toBe(true);
      expect(rows.some((r) => r === 'the-current-turn'), rows.join('\n')).toBe(true);
      expect(rows.some((r) => r.startsWith("full-screen-left-over")), JSON.stringify(rows)).toBe(false);
      expect(await page.textContent('#terminal-caption')).toMatch(/\$ echo the-current-turn — exit 0/);

      const dir = process.env.ASTRA_SCREENSHOT_DIR ?? home;
      fs.mkdirSync(dir, { recursive: true });
      await page.screenshot({ path: path.join(dir, 'web-1280x800.png') });

      // Up to here, nothing in the console at all (no CSP refusal, no missing file).
      expect(console).toEqual([]);

      // The gateway goes away: the status bar says so, in the window.
      await stopWeb(g);
      await waitProbe(page, 'the page to say reconnecting', (p) => p.state === 'reconnecting', 20_000);
      expect(await page.textContent('#status-stream')).toMatch(/reconnecting…/);
      await expectWhollyVisible('the status bar saying reconnecting', page.locator('#status'));
      if (process.env.ASTRA_SCREENSHOT_DIR) await page.screenshot({ path: path.join(dir, 'web-1280x800-reconnecting.png') });

      expect(console.filter((t) => /Content.Security.Policy/i.test(t))).toEqual([]);
    } finally {
      await ctx.close();
    }
  });
});
