// Debian's chromium driven by playwright-core: a fresh profile per launch (launch() makes one),
// the flags that keep it off the network, and helpers to read what the page shows.
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_PATH } from '../helpers/system-tools.js';

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_FLAGS, ...extraArgs], timeout: 30_000 });
}

/** The page's probe (web/page/app.ts): every seq rendered, the terminal's text, the stream state. */
export interface Probe {
  seqs: number[];
  terminal: string;
  state: string;
  /** The last 100 states the status bar showed, each "state" or "state: detail". */
  states: string[];
}

export async function probe(page: Page): Promise<Probe> {
  return page.evaluate(() => {
    const a = (globalThis as unknown as { astra: { seqs: number[]; terminalText(): string; streamState: string; streamStates: string[] } }).astra;
    return { seqs: [...a.seqs], terminal: a.terminalText(), state: a.streamState, states: [...a.streamStates] };
  });
}

export async function waitProbe(page: Page, what: string, pred: (p: Probe) => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const p = await probe(page);
    if (pred(p)) return;
    last = p;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; page probe: ${JSON.stringify(last).slice(0, 2000)}`);
    await page.waitForTimeout(50);
  }
}

/**
 * Waits until the page has rendered every event of the session's journal exactly once, in order: its
 * seqs equal `journal()` (re-read on each poll, since events may still be journaled after what the
 * test waited for — a turn's end, a lease released on disconnect). A duplicate or a gap never
 * matches, so it fails with both lists.
 */
export async function waitEveryEventOnce(page: Page, journal: () => Promise<number[]>, timeoutMs = 20_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const want = await journal();
    const got = (await probe(page)).seqs;
    if (got.length === want.length && got.every((s, i) => s === want[i])) return got;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for the page to show every journaled event once, in order;\n  journal: ${JSON.stringify(want)}\n  page:    ${JSON.stringify(got)}`);
    }
    await page.waitForTimeout(50);
  }
}

/** On the page's session list: a new session (chat with `model` when given, else shell), its view live; its id. */
export async function newSessionInPage(page: Page, model?: string): Promise<string> {
  await page.waitForSelector('#new-session:not([disabled])', { timeout: 20_000 });
  if (model !== undefined) {
    await page.selectOption('#new-engine', 'chat');
    await page.fill('#new-model', model);
  }
  await page.click('#new-session');
  await page.waitForSelector('#status[data-stream="live"]', { timeout: 20_000 });
  return decodeURIComponent(new URL(page.url()).hash.slice('#/s/'.length));
}

/** Take control in the session view, and wait until the page says it has it. */
export async function takeControlInPage(page: Page): Promise<void> {
  await page.click('#take');
  await page.waitForSelector('#status-control[data-controlled="true"]', { timeout: 20_000 });
}
