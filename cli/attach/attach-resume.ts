// The resume token of the lease an `astra attach` holds, kept so that attach run again in the same
// terminal after the previous one crashed (kill -9, a lost SSH link) reclaims control within the
// lease's grace period — as an application does with `lease.toJSON()` (docs/client.md). One 0600 file
// per session in the private runtime directory, `attach/<sessionId>.json`: written on every grant
// (the token changes each time), removed when control is released or lost. It is only used when the
// attach that wrote it is gone and it was written from this terminal (the tty's name; where a
// terminal has no name, any attach of the session by this user qualifies): another terminal attached
// meanwhile still waits for the grace to end, as before.
import fs from 'node:fs';
import path from 'node:path';
import { ensurePrivateDir, isProcessAlive, resolvePaths } from '../../discovery/index.js';
import type { ControllerLease } from '../../client/index.js';

export interface SavedAttachLease {
  sessionId: string;
  epoch: number;
  resumeToken: string;
  /** The terminal (tty path) the writing attach ran in, when it has one. */
  terminal?: string;
  /** The attach that wrote it: a live one is not reclaimed from. */
  pid: number;
}

/** The name of the terminal on stdin (Linux: /dev/pts/N), or undefined. */
export function terminalName(stdin: { isTTY?: boolean }): string | undefined {
  if (!stdin.isTTY || process.platform !== 'linux') return undefined;
  try {
    return fs.readlinkSync('/proc/self/fd/0');
  } catch {
    return undefined;
  }
}

export class AttachLeaseFile {
  private readonly file: string;
  private readonly dir: string;
  private warned = false;
  /** This attach wrote the file (held control): only then is removing it its business. */
  private mine = false;

  constructor(
    env: NodeJS.ProcessEnv,
    private readonly sessionId: string,
    private readonly terminal: string | undefined,
    /** Told once when the file cannot be written (control still works; only a crash's reclaim is lost). */
    private readonly warn: (text: string) => void,
  ) {
    this.dir = path.join(resolvePaths(env).runtimeDir, 'attach');
    // A session id is ses_ and URL-safe characters; anything else would not name a file safely.
    this.file = path.join(this.dir, `${sessionId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
  }

  /** The token left by a crashed attach in this terminal, if any. */
  reclaimable(): SavedAttachLease | undefined {
    let saved: SavedAttachLease;
    try {
      saved = JSON.parse(fs.readFileSync(this.file, 'utf8')) as SavedAttachLease;
    } catch {
      return undefined; // none, or unreadable: attach as if there were none
    }
    if (saved.sessionId !== this.sessionId || typeof saved.resumeToken !== 'string' || typeof saved.pid !== 'number') return undefined;
    if (saved.pid !== process.pid && isProcessAlive(saved.pid)) return undefined;
    if (saved.terminal !== undefined && this.terminal !== undefined && saved.terminal !== this.terminal) return undefined;
    return saved;
  }

  save(lease: ControllerLease): void {
    const saved: SavedAttachLease = {
      sessionId: lease.sessionId,
      epoch: lease.epoch,
      resumeToken: lease.resumeToken,
      pid: process.pid,
      ...(this.terminal !== undefined ? { terminal: this.terminal } : {}),
    };
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      ensurePrivateDir(this.dir);
      fs.writeFileSync(tmp, JSON.stringify(saved), { mode: 0o600 });
      fs.renameSync(tmp, this.file);
      this.mine = true;
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      if (!this.warned) {
        this.warned = true;
        this.warn(`could not keep the resume token in ${this.file} (${(e as Error).message}); if this attach crashes, control comes free only after the grace period`);
      }
    }
  }

  /**
   * Control was released or lost: nothing is left to reclaim. Only a file this attach wrote is
   * removed (an observer leaves a crashed controller's token alone), and not once a live attach
   * that took control since has written its own.
   */
  remove(): void {
    if (!this.mine) return;
    const saved = this.readAny();
    if (saved && saved.pid !== process.pid && isProcessAlive(saved.pid)) return;
    fs.rmSync(this.file, { force: true });
  }

  private readAny(): SavedAttachLease | undefined {
    try {
      return JSON.parse(fs.readFileSync(this.file, 'utf8')) as SavedAttachLease;
    } catch {
      return undefined;
    }
  }
}
