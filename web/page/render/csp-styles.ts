// The page's CSP (default-src 'self') refuses <style> elements, and xterm.js creates some for its
// theme and cell sizes. The CSSOM is not subject to CSP: mirror each such element's text into a
// constructed stylesheet, kept in step as xterm rewrites it.
const mirrored = new Map<HTMLStyleElement, CSSStyleSheet>();

function sync(el: HTMLStyleElement): void {
  let sheet = mirrored.get(el);
  if (!sheet) {
    sheet = new CSSStyleSheet();
    mirrored.set(el, sheet);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  }
  sheet.replaceSync(el.textContent ?? '');
}

export function mirrorStyleElements(): void {
  const observer = new MutationObserver(() => {
    for (const el of document.querySelectorAll('style')) sync(el);
    for (const [el, sheet] of mirrored) {
      if (!el.isConnected) {
        mirrored.delete(el);
        document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
      }
    }
  });
  observer.observe(document.documentElement, { subtree: true, childList: true, characterData: true });
}
