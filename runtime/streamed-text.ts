// Whether a message.completed's text is exactly what its turn streamed: the concatenation of the
// turn's message.delta texts since its turn.started or its previous message.completed. The session
// host feeds it each appended event of those kinds; a message.completed found so is marked on its
// StoredEvent (textStreamed), and the daemon may then send it to a subscriber that got those deltas
// without its text (session/subscribe textFromDeltas). Checked, not assumed: an engine may stream
// one thing and complete with another (an embedded engine's "working…" then "done").
export class StreamedText {
  /** Per running turn, the delta texts since its start or its last message.completed. */
  private readonly parts = new Map<string, string[]>();

  started(turnId: string): void {
    this.parts.set(turnId, []);
  }

  delta(turnId: string, text: string): void {
    this.parts.get(turnId)?.push(text);
  }

  /** A message.completed of `turnId` with `text`: whether the deltas streamed since make it up exactly (a non-empty text). */
  completed(turnId: string, text: string): boolean {
    const parts = this.parts.get(turnId);
    if (!parts) return false;
    this.parts.set(turnId, []);
    if (text === '' || parts.length === 0) return false;
    // Piece by piece: no copy of a long answer's text to compare it.
    let at = 0;
    for (const p of parts) {
      if (!text.startsWith(p, at)) return false;
      at += p.length;
    }
    return at === text.length;
  }

  ended(turnId: string): void {
    this.parts.delete(turnId);
  }
}
