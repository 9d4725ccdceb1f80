// The terminal benchmark's rows in the report table: the same shape as bench/run.ts's figures, with
// tmux in the baseline ("bare") column; and the table in bench/REPORT.md's terminal part.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HERE, type Figure } from '../lib.js';

export type Side = 'astra' | 'tmux';
export interface TerminalResult {
  /** Per figure, per side, one value per run. */
  samples: Record<string, Partial<Record<Side, number[]>>>;
  /** Medians of the runs. */
  medians: Record<string, Partial<Record<Side, number>>>;
  /** What failed on a side, per figure (the figure then has no value for that side). */
  errors: string[];
  parameters: Record<string, number | string>;
}

const SRC_BENCH = path.resolve(HERE, '..', '..', 'bench');
const TABLE_START = '<!-- bench:terminal:start -->';
const TABLE_END = '<!-- bench:terminal:end -->';

/** A report row; `bare` is tmux's figure, and there are no jsonrpc or grpc peers. */
export type TerminalFigure = Figure;

export function terminalFigures(r: TerminalResult): TerminalFigure[] {
  const row = (id: string, name: string, unit: string, better: 'higher' | 'lower', target: string, passes?: (astra: number, tmux: number) => boolean): TerminalFigure => {
    const a = r.medians[id]?.astra;
    const t = r.medians[id]?.tmux;
    return {
      id, name, unit, better, astra: a, bare: t, jsonrpc: undefined, grpc: undefined,
      ratio: a !== undefined && t !== undefined && t > 0 ? a / t : undefined,
      target,
      pass: passes && a !== undefined && t !== undefined ? passes(a, t) : target ? false : undefined,
    };
  };
  return [
    row('terminal.keyP50ms', `terminal: key → cat's echo on an observer, p50 of ${r.parameters.KEYS} (bare: tmux, two clients)`, 'ms', 'lower', '≤ tmux + 2 ms', (a, t) => a - t <= 2),
    row('terminal.keyP99ms', 'terminal: the same, p99', 'ms', 'lower', ''),
    row('terminal.keyDaemonP50ms', 'terminal: the daemon\'s share — command/input → command.output at an in-process subscriber, p50', 'ms', 'lower', ''),
    row('terminal.keyDaemonP99ms', 'terminal: the same, p99', 'ms', 'lower', ''),
    row('terminal.seqMBPerSec', `terminal: \`seq 1 ${r.parameters.SEQ_N}\` to two attached clients (bare: tmux pane, two clients)`, 'MB/s', 'higher', '≥ 1.0× tmux', (a, t) => a / t >= 1.0),
    row('terminal.seqClientMB', 'terminal: the same, bytes each client\'s terminal received', 'MB', 'lower', ''),
    row('terminal.seqDaemonMs', 'terminal: the same, the command in the daemon (command.started → turn.completed)', 'ms', 'lower', ''),
    row('terminal.seqServerCpuMs', 'terminal: the same, CPU of the server (the daemon; the tmux server)', 'ms', 'lower', ''),
    row('terminal.seqClientCpuMs', 'terminal: the same, CPU of each client process', 'ms', 'lower', ''),
    row('terminal.seqReaderCpuMs', 'terminal: the same, CPU of the bench reading both client terminals', 'ms', 'lower', ''),
    row('terminal.seqAloneMs', `terminal: \`seq 1 ${r.parameters.SEQ_N}\` with no client attached — the server alone (Astra: command.started → turn.completed)`, 'ms', 'lower', ''),
    row('terminal.seqAloneCpuMs', 'terminal: the same, CPU of the server (the daemon with its screen worker; the tmux server)', 'ms', 'lower', ''),
    row('terminal.coldAttachMs', 'terminal: a fresh attach process to its first screen (bare: tmux attach -r)', 'ms', 'lower', ''),
  ];
}

function fmt(v: number | undefined): string {
  return v === undefined || Number.isNaN(v) ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(2);
}

export function terminalTable(figs: TerminalFigure[]): string[] {
  return [
    '| figure | unit | Astra | tmux | ratio | target | |',
    '|---|---|---:|---:|---:|---|---|',
    ...figs.map((f) => `| ${f.name} | ${f.unit} | ${fmt(f.astra)} | ${fmt(f.bare)} | ${f.ratio === undefined ? '—' : `${f.ratio.toFixed(2)}×`} | ${f.target} | ${f.pass === undefined ? '' : f.pass ? 'pass' : '**miss**'} |`),
  ];
}

/** Replaces the terminal table in REPORT.md (between its markers), keeping the text around it. */
export function writeTerminalTable(figs: TerminalFigure[], result: TerminalResult): void {
  const file = path.join(SRC_BENCH, 'REPORT.md');
  if (!fs.existsSync(file)) return;
  const lines = [
    TABLE_START,
    `Measured ${new Date().toISOString()} on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown'}, Node ${process.version}; median of ${result.parameters.REPEATS} runs, Astra and tmux alternating.`,
    '',
    ...terminalTable(figs),
    ...(result.errors.length ? ['', ...result.errors.map((e) => `- failed: ${e.replace(/\n/g, ' ').slice(0, 300)}`)] : []),
    TABLE_END,
  ];
  let text = fs.readFileSync(file, 'utf8');
  const a = text.indexOf(TABLE_START);
  const b = text.indexOf(TABLE_END);
  text = a >= 0 && b > a ? text.slice(0, a) + lines.join('\n') + text.slice(b + TABLE_END.length) : text + '\n' + lines.join('\n') + '\n';
  fs.writeFileSync(file, text);
}
