// Command output in the page's terminal (xterm.js), in real chromium against a real gateway and a
// daemon whose commands run in a pseudo-terminal (ASTRA_TERMINAL=auto): `\r\n` line ends, colours
// and a `\r` progress bar end up on the screen as a terminal shows them.
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { envFor, useTempHomes } from '../helpers/processes.js';
import { CHROMIUM, skipWithout } from '../helpers/system-tools.js';
import { launchBrowser, newSessionInPage, takeControlInPage } from './browser-helpers.js';
import { request, startWeb, stopAllWebs } from './gateway-helpers.js';

const skipChromium = skipWithout(CHROMIUM);
const newHome = useTempHomes('atm');
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(stopAllWebs);
let browser: Browser;
beforeAll(async () => {
  if (!skipChromium) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

const lines = (page: Page): Promise<string[]> => page.evaluate(() => (globalThis as any).astra.terminalLines() as string[]);

// Runs the command and waits until the screen shows the line `until` below the command's own prompt line.
async function run(page: Page, command: string, until: string): Promise<string[]> {
  await page.fill('#input', command);
  await page.click('#send');
  await page.waitForSelector('.card.approval:not(.resolved) button.approve', { timeout: 20_000 });
  await page.click('.card.approval:not(.resolved) button.approve');
  let last: string[] = [];
  const deadline = Date.now() + 20_000;
  for (;;) {
    last = await lines(page);
    const at = last.lastIndexOf(`$ ${command}`);
    if (at >= 0 && last.slice(at).includes(until)) return last;
    if (Date.now() > deadline) throw new Error(`the terminal never showed the line "${until}"; it shows ${JSON.stringify(last)}`);
    await page.waitForTimeout(50);
  }
}

describe.skipIf(skipChromium)('the page\'s terminal in chromium', () => {
  it('renders pseudo-terminal output as a terminal would: \\r\\n lines, colours, and a \\r progress bar as one line', async () => {
    const home = newHome();
    const env = envFor(home, { ASTRA_TERMINAL: 'auto' });
    const g = await startWeb(env);
    const ctx = await browser.newContext();
    try {
      const tab = await ctx.newPage();
      await tab.goto(g.link);
      const id = await newSessionInPage(tab);
      await takeControlInPage(tab);

      const cmd1 = "printf 'one\\ntwo\\n'; printf '\\033[31mred\\033[0m plain\\n'";
      let shown = await run(tab, cmd1, '[exit 0]');
      // The command really had a terminal: its tty turned each \n into \r\n.
      const cookie = (await ctx.cookies(g.origin)).map((c) => `${c.name}=${c.value}`).join('; ');
      const read = await request(g.port, 'GET', `/v1/sessions/${id}?limit=1000`, { cookie });
      const started = read.body.events.find((e: any) => e.type === 'command.started');
      expect(started.data.tty).toBe(true);
      const out = read.body.events.filter((e: any) => e.type === 'command.output').map((e: any) => Buffer.from(e.data.data, 'base64').toString()).join('');
      expect(out).toBe('one\r\ntwo\r\n\x1b[31mred\x1b[0m plain\r\n');
      expect(shown).toEqual([`$ ${cmd1}`, 'one', 'two', 'red plain', '[exit 0]']);
      // "red" is drawn in palette colour 1, " plain" in the default colour.
      const colours = await tab.evaluate(() => {
        const buf = (globalThis as any).astra.terminal.buffer.active;
        const line = buf.getLine(3);
        const at = (x: number) => ({ ch: line.getCell(x).getChars(), palette: line.getCell(x).isFgPalette(), fg: line.getCell(x).getFgColor(), isDefault: line.getCell(x).isFgDefault() });
        return [at(0), at(4)];
      });
      expect(colours).toEqual([{ ch: 'r', palette: true, fg: 1, isDefault: false }, { ch: 'p', palette: false, fg: -1, isDefault: true }]);

      const cmd2 = "for i in 1 2 3 4 5; do printf '\\rprogress %d/5' $i; sleep 0.05; done; printf ' done\\n'";
      shown = await run(tab, cmd2, '[exit 0]');
      const after = shown.slice(shown.indexOf(`$ ${cmd2}`));
      expect(after).toEqual([`$ ${cmd2}`, 'progress 5/5 done', '[exit 0]']);
      expect(shown.filter((l) => l.startsWith('progress'))).toHaveLength(1);

      // Output that ends without a new line: the exit line and the next command start on lines of their own.
      const cmd3 = "printf 'no newline'";
      shown = await run(tab, cmd3, 'no newline');
      await tab.waitForFunction(() => ((globalThis as any).astra.terminalLines() as string[]).at(-1) === '[exit 0]', undefined, { timeout: 20_000 });
      shown = await lines(tab);
      expect(shown.slice(shown.indexOf(`$ ${cmd3}`))).toEqual([`$ ${cmd3}`, 'no newline', '[exit 0]']);

      // A bare line feed (the tty's onlcr off) moves down without a carriage return, as on any terminal.
      const cmd4 = "stty -onlcr; printf 'ab\\ncd\\n'; stty onlcr";
      shown = await run(tab, cmd4, '  cd');
      expect(shown.slice(shown.indexOf(`$ ${cmd4}`), shown.indexOf(`$ ${cmd4}`) + 3)).toEqual([`$ ${cmd4}`, 'ab', '  cd']);
    } finally {
      await ctx.close();
    }
  });
});
