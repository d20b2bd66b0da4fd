// What the docs' link check (test/readme-claims.test.ts) reads in a Markdown
// file: its headings' anchors, as GitHub makes them, and its relative links.

/** Markdown text with its fenced code blocks blanked (line numbers kept) and each inline code span made the word 'code': a link written there is text. */
export function withoutCode (markdown: string): string {
  let fenced = false
  return markdown.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced
      return ''
    }
    return fenced ? '' : line.replace(/(`+)[\s\S]*?\1/g, 'code')
  }).join('\n')
}

/**
 * GitHub's anchor for a heading's text: the rendered text (code spans and
 * links as their text), lower-cased, every character but letters, digits,
 * spaces, hyphens and underscores removed, spaces made hyphens.
 */
export function slug (heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/<[^>]+>/g, '')
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
}

/** Every anchor of a Markdown file: its headings' (a repeated one numbered -1, -2, as GitHub does) and any HTML element's id or name. */
export function anchors (markdown: string): Set<string> {
  const found = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    if (fenced) continue
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading !== null) {
      const base = slug(heading[1])
      const n = seen.get(base) ?? 0
      seen.set(base, n + 1)
      found.add(n === 0 ? base : `${base}-${n}`)
    }
    for (const m of line.matchAll(/<[a-z]+\s[^>]*\b(?:id|name)="([^"]+)"/gi)) found.add(m[1])
  }
  return found
}

/** The relative links of a Markdown file (inline links, images and reference definitions; not URLs with a scheme), with their lines. */
export function relativeLinks (markdown: string): Array<{ target: string, line: number }> {
  const links: Array<{ target: string, line: number }> = []
  withoutCode(markdown).split('\n').forEach((text, i) => {
    const targets = [
      ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
      ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/g)].map((m) => m[1])
    ]
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      links.push({ target, line: i + 1 })
    }
  })
  return links
}
