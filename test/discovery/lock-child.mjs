// Test helper: takes the proper-lockfile lock on argv[2] with stale argv[3] (as discovery/ does),
// says "locked", and holds it until killed.
import fs from 'node:fs';
import lockfile from 'proper-lockfile';

const target = process.argv[2];
const stale = Number(process.argv[3]);
fs.closeSync(fs.openSync(target, 'a', 0o600));
await lockfile.lock(target, { realpath: false, stale, retries: 0, onCompromised: () => {} });
process.stdout.write('locked\n');
setInterval(() => {}, 60_000);
