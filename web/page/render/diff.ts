// A file edit as a diff (an ACP tool call's content of type 'diff': path, oldText — null for a new
// file —, newText): a line diff drawn as DOM nodes, removed lines red, added lines green, long runs
// of unchanged lines folded. Text is only ever set as textContent.

/** One line of the diff: ' ' unchanged, '-' removed, '+' added. */
export interface DiffLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** Above this many cells the middle is not aligned line by line: its old lines are removed and its new ones added. */
const MAX_CELLS = 2_000_000;
/** Unchanged lines kept around a change; a longer run between changes is folded. */
const CONTEXT = 3;

function lines(text: string): string[] {
  if (text === '') return [];
  const l = text.split('\n');
  if (l[l.length - 1] === '') l.pop();
  return l;
}

/** The line diff of two texts (the longest common subsequence of their lines, common ends first). */
export function diffLines(oldText: string, newText: string): DiffLine[] {
  const a = lines(oldText);
  const b = lines(newText);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const head: DiffLine[] = a.slice(0, start).map((text) => ({ op: ' ', text }));
  const tail: DiffLine[] = a.slice(endA).map((text) => ({ op: ' ', text }));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const n = midA.length;
  const m = midB.length;
  if (n * m > MAX_CELLS) return [...head, ...midA.map((text) => ({ op: '-' as const, text })), ...midB.map((text) => ({ op: '+' as const, text })), ...tail];
  // lcs[i][j]: the common subsequence's length of midA[i..] and midB[j..], in one flat array.
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i * w + j] = midA[i] === midB[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
  const mid: DiffLine[] = [];
  let i = 0;
  let j = 0;
  // Removed lines before added ones, as a unified diff shows them.
  while (i < n || j < m) {
    if (i < n && j < m && midA[i] === midB[j]) {
      mid.push({ op: ' ', text: midA[i++]! });
      j++;
    } else if (i < n && (j >= m || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) mid.push({ op: '-', text: midA[i++]! });
    else mid.push({ op: '+', text: midB[j++]! });
  }
  return [...head, ...mid, ...tail];
}

function span(className: string, text: string): HTMLElement {
  const e = document.createElement('span');
  e.className = className;
  e.textContent = text;
  return e;
}

/** The diff's element: its path and counts, then its lines (a <pre>), unchanged runs folded to CONTEXT lines around each change. */
export function renderDiff(path: string, oldText: string | null | undefined, newText: string): HTMLElement {
  const box = document.createElement('div');
  box.className = 'diff';
  box.dataset.path = path;
  const all = diffLines(oldText ?? '', newText);
  const added = all.filter((l) => l.op === '+').length;
  const removed = all.filter((l) => l.op === '-').length;
  const head = document.createElement('div');
  head.className = 'diff-head';
  head.append(span('diff-path', path), ' ', span('diff-count add', `+${added}`), ' ', span('diff-count del', `-${removed}`));
  if (oldText === null) head.append(' ', span('diff-new', '(new file)'));
  const pre = document.createElement('pre');
  pre.className = 'diff-body';
  const near = all.map(() => false);
  all.forEach((l, k) => {
    if (l.op === ' ') return;
    for (let d = Math.max(0, k - CONTEXT); d <= Math.min(all.length - 1, k + CONTEXT); d++) near[d] = true;
  });
  let folded = 0;
  const fold = (): void => {
    if (folded > 0) pre.append(span('diff-line fold', `… ${folded} unchanged line${folded === 1 ? '' : 's'}\n`));
    folded = 0;
  };
  all.forEach((l, k) => {
    if (!near[k]) {
      folded++;
      return;
    }
    fold();
    pre.append(span(`diff-line ${l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'same'}`, `${l.op} ${l.text}\n`));
  });
  fold();
  box.append(head, pre);
  return box;
}
