// What keeping a command's screen costs on the hot path: `seq 1 2000000` in a pseudo-terminal
// through the runtime's shell engine (journal, fan-out to no one), without a screen, with the
// screen parsed on the event loop ('inline'), and on the screen worker thread (the default;
// RuntimeOptions.commandScreens), interleaved in one process, cold (first round) and warm (the
// rest). Reports MB/s and the peak RSS growth; asserts nothing.
//
//   npm run build && node dist/bench/terminal/screen-cost.js [repeats]
import fs from 'node:fs';
import { Runtime } from '../../runtime/index.js';
import { createShellEngine } from '../../engines/index.js';
import { median, tempDir } from '../lib.js';

const COMMAND = process.env.SCREEN_BENCH_COMMAND ?? 'seq 1 2000000';
const REPEATS = Number(process.argv[2] ?? process.env.BENCH_REPEATS ?? 4);

type Side = 'without' | 'inline' | 'worker';
const SIDES: Side[] = ['without', 'inline', 'worker'];

async function once(side: Side): Promise<{ mbPerSec: number; bytes: number; rssGrowthMb: number }> {
  const dir = tempDir('astra-screen-bench-');
  const commandScreens = side === 'without' ? false : side === 'inline' ? 'inline' : true;
  const rt = await Runtime.open({ dataDir: dir, commandScreens, engines: { shell: createShellEngine({ terminal: 'auto' }) } });
  try {
    const s = await rt.createSession({ cwd: dir, approvalPolicy: 'auto' });
    let bytes = 0;
    rt.on('event', (e) => {
      if (e.type === 'command.output') bytes += (e.data as { data: Uint8Array }).data.length;
    });
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const ended = new Promise<void>((resolve) => rt.on('turnEnded', () => resolve()));
    const t0 = performance.now();
    await rt.startTurn(s.id, { text: COMMAND }, 'k');
    await ended;
    const ms = performance.now() - t0;
    clearInterval(sampler);
    return { mbPerSec: bytes / 1e6 / (ms / 1000), bytes, rssGrowthMb: (peak - rss0) / 1e6 };
  } finally {
    await rt.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const runs: Record<Side, number[]> = { without: [], inline: [], worker: [] };
  for (let i = 0; i < REPEATS; i++) {
    // Rotate which goes first, so none always runs on a colder or hotter machine.
    const order = SIDES.map((_, k) => SIDES[(k + i) % SIDES.length]!);
    for (const side of order) {
      const r = await once(side);
      runs[side].push(r.mbPerSec);
      process.stdout.write(`${i === 0 ? 'cold' : 'warm'} ${side.padEnd(7)}: ${r.mbPerSec.toFixed(1)} MB/s (${(r.bytes / 1e6).toFixed(1)} MB), peak RSS +${r.rssGrowthMb.toFixed(0)} MB\n`);
    }
  }
  const warm = (side: Side) => runs[side].slice(1);
  if (REPEATS < 2) return;
  const base = median(warm('without'));
  for (const side of SIDES) {
    const w = warm(side);
    process.stdout.write(`warm ${side.padEnd(7)}: median ${median(w).toFixed(1)} MB/s [${Math.min(...w).toFixed(1)}–${Math.max(...w).toFixed(1)}], ${(median(w) / base).toFixed(2)}× without\n`);
  }
}

void main();
