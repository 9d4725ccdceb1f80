// The part of @lydell/node-pty the pty room uses (loaded at run time by pty-command.ts: a native
// module may be absent): a process in a pseudo-terminal, and the module that spawns one.

/** A process in a pseudo-terminal. */
export interface PtyProcess {
  readonly pid: number;
  onData(listener: (data: Buffer | string) => void): { dispose(): void };
  onExit(listener: (e: { exitCode: number; signal?: number }) => void): { dispose(): void };
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
}
/** What spawns one. */
export interface PtyModule {
  spawn(
    file: string,
    args: string[],
    opts: { name: string; cols: number; rows: number; cwd: string; env: Record<string, string>; encoding: null },
  ): PtyProcess;
}
