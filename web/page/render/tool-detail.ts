// What an ACP tool call says of itself beyond its name (tool.call, tool.updated: locations and
// content): the files it touches, its text, its diffs drawn as diffs (diff.ts), the terminals it
// names. Agent text is only ever set as textContent.
import { renderDiff } from './diff.js';

interface Location {
  path?: unknown;
  line?: unknown;
}
interface Content {
  type?: unknown;
  text?: unknown;
  path?: unknown;
  oldText?: unknown;
  newText?: unknown;
  terminalId?: unknown;
}

function el(tag: string, className: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The files a call touches, "path:line" each. */
export function renderLocations(locations: unknown): HTMLElement | undefined {
  if (!Array.isArray(locations) || locations.length === 0) return undefined;
  const box = el('div', 'tool-locations');
  for (const l of locations as Location[]) {
    if (typeof l?.path !== 'string') continue;
    box.append(el('code', 'tool-location', typeof l.line === 'number' ? `${l.path}:${l.line}` : l.path), ' ');
  }
  return box;
}

/** A call's content, each item in its own element: text, a diff, a terminal, or (a type from a newer ACP) its type named. */
export function renderContent(content: unknown): HTMLElement[] {
  if (!Array.isArray(content)) return [];
  return (content as Content[]).map((c) => {
    if (c?.type === 'diff' && typeof c.newText === 'string')
      return renderDiff(typeof c.path === 'string' ? c.path : '(no path)', typeof c.oldText === 'string' ? c.oldText : c.oldText === null ? null : undefined, c.newText);
    if (c?.type === 'text' || typeof c?.text === 'string') return el('pre', 'tool-output tool-text', String(c.text ?? ''));
    if (c?.type === 'terminal') return el('div', 'tool-terminal', `terminal ${String(c.terminalId ?? '')}`);
    return el('div', 'tool-content-other', `(${String(c?.type ?? 'content')})`);
  });
}
