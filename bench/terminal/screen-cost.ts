// What keeping a command's screen costs on the hot path: `seq 1 2000000` in a pseudo-terminal
// through the runtime's shell engine (journal, fan-out to no one), with the daemon's CommandScreen
// (RuntimeOptions.commandScreens) and without, interleaved A/B in one process, cold (first run) and
// warm (the rest). Reports MB/s and the peak RSS growth; asserts nothing.
//
//   npm run build && node dist/bench/terminal/screen-cost.js [repeats]
import fs from 'node:fs';
import { Runtime, createShellEngine } from '../../runtime/index.js';
import { median, tempDir } from '../lib.js';

const COMMAND = process.env.SCREEN_BENCH_COMMAND ?? 'seq 1 2000000';
const REPEATS = Number(process.argv[2] ?? process.env.BENCH_REPEATS ?? 4);

async function once(commandScreens: boolean): Promise<{ mbPerSec: number; bytes: number; rssGrowthMb: number }> {
  const dir = tempDir('astra-screen-bench-');
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
  const runs: Record<'with' | 'without', { mbPerSec: number; rssGrowthMb: number }[]> = { with: [], without: [] };
  for (let i = 0; i < REPEATS; i++) {
    // Alternate which goes first, so neither always runs on a colder or hotter machine.
    const order: ('with' | 'without')[] = i % 2 === 0 ? ['without', 'with'] : ['with', 'without'];
    for (const side of order) {
      const r = await once(side === 'with');
      runs[side].push(r);
      process.stdout.write(`${i === 0 ? 'cold' : 'warm'} ${side.padEnd(7)} screen: ${r.mbPerSec.toFixed(1)} MB/s (${(r.bytes / 1e6).toFixed(1)} MB), peak RSS +${r.rssGrowthMb.toFixed(0)} MB\n`);
    }
  }
  const warm = (side: 'with' | 'without') => runs[side].slice(1).map((r) => r.mbPerSec);
  const w = warm('with');
  const wo = warm('without');
  if (w.length > 0) {
    process.stdout.write(
      `warm median: with ${median(w).toFixed(1)} MB/s [${Math.min(...w).toFixed(1)}–${Math.max(...w).toFixed(1)}], ` +
        `without ${median(wo).toFixed(1)} MB/s [${Math.min(...wo).toFixed(1)}–${Math.max(...wo).toFixed(1)}]; ratio ${(median(w) / median(wo)).toFixed(2)}\n`,
    );
  }
}

void main();
