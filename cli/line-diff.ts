// A unified diff of two texts, line by line, for showing an agent's file edit in a terminal: the
// common head and tail are set aside, the middle is matched by a longest common subsequence, and
// changes are printed in hunks with 3 lines of context. A middle too large to match (its two sides'
// line counts multiplied past MAX_CELLS) is shown as all removed, then all added: still true, only
// less tight.

const CONTEXT = 3;
const MAX_CELLS = 4_000_000;

type Op = { op: ' ' | '-' | '+'; text: string; a: number; b: number };

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The edit script from `a` to `b`: each line kept, removed or added, with its line numbers (0-based). */
function editScript(a: string[], b: string[]): Op[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const ops: Op[] = [];
  for (let i = 0; i < head; i++) ops.push({ op: ' ', text: a[i]!, a: i, b: i });
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const n = am.length;
  const m = bm.length;
  if (n * m > MAX_CELLS) {
    am.forEach((t, i) => ops.push({ op: '-', text: t, a: head + i, b: head }));
    bm.forEach((t, j) => ops.push({ op: '+', text: t, a: head + n, b: head + j }));
  } else {
    // lcs[i][j]: the longest common subsequence of am[i..] and bm[j..], in one flat array.
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--) lcs[i * w + j] = am[i] === bm[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) ops.push({ op: ' ', text: am[i]!, a: head + i++, b: head + j++ });
      // Removals before additions, as diff(1) prints them.
      else if (i < n && (j >= m || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) ops.push({ op: '-', text: am[i]!, a: head + i++, b: head + j });
      else ops.push({ op: '+', text: bm[j]!, a: head + i, b: head + j++ });
    }
  }
  for (let k = 0; k < tail; k++) ops.push({ op: ' ', text: a[a.length - tail + k]!, a: a.length - tail + k, b: b.length - tail + k });
  return ops;
}

/** `--- a/file`, `+++ b/file` and the hunks; `oldText` null: a new file (`--- /dev/null`). Equal texts: no lines. */
export function unifiedDiff(file: string, oldText: string | null, newText: string): string[] {
  const ops = editScript(splitLines(oldText ?? ''), splitLines(newText));
  const changed = ops.map((o, i) => (o.op !== ' ' ? i : -1)).filter((i) => i >= 0);
  if (changed.length === 0) return [];
  // An absolute path (what ACP agents send) is shown as it is; a relative one as git shows it.
  const [from, to] = file.startsWith('/') ? [file, file] : [`a/${file}`, `b/${file}`];
  const out = [oldText === null ? '--- /dev/null' : `--- ${from}`, `+++ ${to}`];
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k]! - CONTEXT);
    let end = changed[k]!;
    // A change within 2×CONTEXT lines of the last joins the hunk.
    while (k + 1 < changed.length && changed[k + 1]! - end <= 2 * CONTEXT) end = changed[++k]!;
    k++;
    const stop = Math.min(ops.length, end + CONTEXT + 1);
    const hunk = ops.slice(start, stop);
    const aLen = hunk.filter((o) => o.op !== '+').length;
    const bLen = hunk.filter((o) => o.op !== '-').length;
    const aStart = aLen === 0 ? hunk[0]!.a : hunk[0]!.a + 1;
    const bStart = bLen === 0 ? hunk[0]!.b : hunk[0]!.b + 1;
    out.push(`@@ -${aStart},${aLen} +${bStart},${bLen} @@`);
    for (const o of hunk) out.push(`${o.op}${o.text}`);
  }
  return out;
}
