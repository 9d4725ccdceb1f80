// Loaded into the soak's daemon with `--import` (SOAK_MEM=1, bench/soak.ts): every 5 s, on the main
// thread and on each worker thread (workers inherit the flag), appends one JSON line to
// $SOAK_MEM_LOG — process.memoryUsage(), V8's space sizes, and the process's resident memory from
// /proc/self/smaps split by kind of mapping: `brk` (glibc's main arena), `anon` (anonymous maps: V8's
// pages, other threads' malloc arenas, large mmapped allocations), `file` (the node binary,
// libraries). A bench tool only: the daemon's own code does not know it is there.
import fs from 'node:fs';
import v8 from 'node:v8';
import { isMainThread, threadId } from 'node:worker_threads';

const out = process.env.SOAK_MEM_LOG;
const t0 = Date.now();
const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

function smaps(): { brk: number; anon: number; file: number; other: number } {
  const kb = { brk: 0, anon: 0, file: 0, other: 0 };
  let name = '';
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1]!;
      continue;
    }
    const rss = /^Rss:\s+(\d+)/.exec(line);
    if (!rss) continue;
    const k = name === '[heap]' ? 'brk' : name === '' ? 'anon' : name.startsWith('/') ? 'file' : 'other';
    kb[k] += Number(rss[1]);
  }
  return { brk: Math.round(kb.brk / 1024), anon: Math.round(kb.anon / 1024), file: Math.round(kb.file / 1024), other: Math.round(kb.other / 1024) };
}

function sample(): void {
  const u = process.memoryUsage();
  const spaces: Record<string, number> = {};
  for (const s of v8.getHeapSpaceStatistics()) if (s.space_size > 0) spaces[s.space_name.replace(/_space$/, '')] = mib(s.space_size);
  const line = {
    thread: isMainThread ? 'main' : `worker ${threadId}`,
    t: Math.round((Date.now() - t0) / 1000),
    rss: mib(u.rss),
    heapTotal: mib(u.heapTotal),
    heapUsed: mib(u.heapUsed),
    external: mib(u.external),
    arrayBuffers: mib(u.arrayBuffers),
    spaces,
    smaps: smaps(),
  };
  fs.appendFileSync(out!, JSON.stringify(line) + '\n');
}

if (out) {
  setTimeout(sample, 1500).unref();
  setInterval(sample, 5000).unref();
}
