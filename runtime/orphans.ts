// After a daemon crash, a shell command it started keeps running in its own process group. When
// the turn comes back 'interrupted', that group is killed — but only if the pid provably is the same
// process (Linux: still a group leader, started within seconds of the command.started event), since
// pids are reused. Elsewhere, or when unsure, it is left alone and reported.
import * as fs from 'node:fs';

const USER_HZ = 100; // Linux exposes jiffies to user space at a fixed 100 Hz

function bootTimeMs(): number | undefined {
  try {
    const m = /^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'));
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Start time (ms since epoch) and process group of a live pid, from /proc; undefined if unknown. */
function procInfo(pid: number): { startMs: number; pgrp: number; zombie: boolean } | undefined {
  const boot = bootTimeMs();
  if (boot === undefined) return undefined;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); pgrp is field 5, starttime field 22.
    return { zombie: fields[0] === 'Z', pgrp: Number(fields[2]), startMs: boot + (Number(fields[19]) * 1000) / USER_HZ };
  } catch {
    return undefined;
  }
}

export type OrphanOutcome = 'killed' | 'gone' | 'not_ours' | 'unknown';

/** Kills the process group led by `pid` if it is the one started at `startedAtMs`. */
export function killOrphanGroup(pid: number, startedAtMs: number): OrphanOutcome {
  const info = procInfo(pid);
  if (!info) {
    try {
      process.kill(pid, 0);
      return 'unknown';
    } catch {
      return 'gone';
    }
  }
  if (info.zombie) return 'gone';
  if (info.pgrp !== pid || Math.abs(info.startMs - startedAtMs) > 3000) return 'not_ours';
  try {
    process.kill(-pid, 'SIGKILL');
    return 'killed';
  } catch {
    return 'gone';
  }
}
