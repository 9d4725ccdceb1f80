import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERRORS, isLocalOnlyError, type ErrorReason, METHOD_NAMES, SERVER_NOTIFICATIONS, SERVER_REQUESTS, EVENT_TYPES } from '../../protocol/index.js';

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'protocol.md');

/** Rows of the first markdown table whose header is `reason | code | on the wire | meaning`. */
function errorTable(markdown: string): Map<string, { code: number; onWire: boolean }> {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^\|\s*reason\s*\|\s*code\s*\|\s*on the wire\s*\|\s*meaning\s*\|\s*$/.test(l.trim()));
  if (start === -1) throw new Error('docs/protocol.md has no table with the header "| reason | code | on the wire | meaning |"');
  const rows = new Map<string, { code: number; onWire: boolean }>();
  for (const line of lines.slice(start + 2)) {
    if (!line.trim().startsWith('|')) break;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const reason = cells[0]!.replace(/`/g, '');
    if (rows.has(reason)) throw new Error(`docs/protocol.md lists ${reason} twice`);
    rows.set(reason, { code: Number(cells[1]), onWire: cells[2]!.startsWith('yes') });
  }
  return rows;
}

describe('docs/protocol.md', () => {
  const markdown = fs.readFileSync(DOC, 'utf8');

  it('lists every error of protocol/errors.ts with its code, and nothing else', () => {
    const documented = errorTable(markdown);
    const missing = Object.keys(ERRORS).filter((r) => !documented.has(r));
    const extra = [...documented.keys()].filter((r) => !(r in ERRORS));
    expect(missing, 'in ERRORS but not in docs/protocol.md').toEqual([]);
    expect(extra, 'in docs/protocol.md but not in ERRORS').toEqual([]);
    for (const [reason, entry] of Object.entries(ERRORS)) expect(documented.get(reason)?.code, reason).toBe(entry.code);
  });

  it('marks exactly the errors that never arrive on the wire', () => {
    const documented = errorTable(markdown);
    for (const reason of Object.keys(ERRORS) as ErrorReason[])
      expect(documented.get(reason)?.onWire, `${reason}: "on the wire" column`).toBe(!isLocalOnlyError(reason));
  });

  it('mentions every method, server request, notification and event type', () => {
    for (const name of [...METHOD_NAMES, ...Object.keys(SERVER_REQUESTS), ...Object.keys(SERVER_NOTIFICATIONS), 'initialized', ...EVENT_TYPES])
      expect(markdown, name).toContain(`\`${name}\``);
  });
});
