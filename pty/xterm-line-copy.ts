// A cheaper line copy for @xterm/headless's scrolling. With its scrollback full, every line feed at the
// bottom of the screen recycles the oldest line and copies a blank line into it (BufferLine.copyFrom),
// and 6.0.0's copyFrom allocates two fresh objects per line (the line's combined characters and extended
// attributes) even when both lines have none: for `seq 1 2000000`, 4 million objects, ~15% of the
// emulator's parse (measured: 410 → 350 ms of CPU for its 16.9 MB) in a flood where the parse is what
// the program waits for. The replacement does exactly the same when neither line holds any (keeps the
// empty objects it has, copies the cells and the wrap flag) and calls the original otherwise. It is
// installed only over the very function it was written against (its source compared): any other
// version of the package keeps its own.
import type { Terminal as XtermTerminal } from '@xterm/headless';

/** 6.0.0's BufferLine.prototype.copyFrom, as its bundle has it. */
const KNOWN_COPY_FROM =
  'copyFrom(e){this.length!==e.length?this._data=new Uint32Array(e._data):this._data.set(e._data),this.length=e.length,this._combined={};for(const t in e._combined)this._combined[t]=e._combined[t];this._extendedAttrs={};for(const t in e._extendedAttrs)this._extendedAttrs[t]=e._extendedAttrs[t];this.isWrapped=e.isWrapped}';

interface Line {
  length: number;
  isWrapped: boolean;
  _data: Uint32Array;
  _combined: Record<string, unknown>;
  _extendedAttrs: Record<string, unknown>;
  copyFrom(src: Line): void;
}

const installed = new WeakSet<object>();

function hasKeys(o: Record<string, unknown>): boolean {
  for (const _ in o) return true;
  return false;
}

/** Installs the copy on the emulator's line class (once); true when it is in place. */
export function useFastLineCopy(term: XtermTerminal): boolean {
  const line = (term as unknown as { _core?: { buffer?: { lines?: { get?(i: number): unknown } } } })._core?.buffer?.lines?.get?.(0);
  if (!line || typeof line !== 'object') return false;
  const proto = Object.getPrototypeOf(line) as Line;
  if (installed.has(proto)) return true;
  const original = proto.copyFrom;
  if (typeof original !== 'function' || Function.prototype.toString.call(original) !== KNOWN_COPY_FROM) return false;
  proto.copyFrom = function copyFrom(this: Line, src: Line): void {
    if (hasKeys(src._combined) || hasKeys(src._extendedAttrs) || hasKeys(this._combined) || hasKeys(this._extendedAttrs)) return original.call(this, src);
    if (this.length !== src.length) this._data = new Uint32Array(src._data);
    else this._data.set(src._data);
    this.length = src.length;
    this.isWrapped = src.isWrapped;
  };
  installed.add(proto);
  return true;
}
