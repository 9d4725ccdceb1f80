// The daemon, run in-process with `--expose-gc` for memory measurements (bench/fuzz-memory.ts): on
// SIGUSR2 it collects garbage and prints process.memoryUsage() as one JSON line on stdout. Not how
// users run it (that is dist/daemon-bundle/main.js); the daemon code is the same.
import { runDaemon } from '../daemon/main.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write('bench/gc-daemon: run with node --expose-gc\n');
  process.exit(2);
}
process.on('SIGUSR2', () => {
  // Twice: the first pass can leave what weak callbacks and finalizers free for the second.
  gc();
  gc();
  process.stdout.write(JSON.stringify(process.memoryUsage()) + '\n');
});
runDaemon(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench/gc-daemon: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
