/**
 * Text that SQLite can keep: well-formed UTF-16 without NUL.
 *
 * Why this matters more than it looks:
 * - A lone UTF-16 surrogate (half an emoji, e.g. left by `.slice(0, n)`) that
 *   travels inside a JSON parameter is decoded by SQLite's `->>` into bytes
 *   that are not UTF-8; libSQL's native addon then panics reading the row
 *   back, and a panic ends the process (it cannot be caught). Bound directly,
 *   the same string is silently stored as U+FFFD instead.
 * - A NUL is stored whole but read back cut at the NUL, so the identifiers
 *   `"trusted\u0000tail"` and `"trusted"` would look identical.
 * So every string stored as a text value is checked before it reaches the
 * database; JSON documents are safe as they are (JSON.stringify writes lone
 * surrogates and NUL as \u escapes).
 *
 * Imports nothing: the worker SDK uses it too.
 */

/** What is wrong with `value` as stored text, or undefined when it can be stored as is. */
export function textProblem(value: string): string | undefined {
  if (!value.isWellFormed()) {
    const at = firstLoneSurrogate(value);
    return `contains a lone UTF-16 surrogate at index ${at} (half of a character such as an emoji, often left by cutting a string): send well-formed text`;
  }
  if (value.includes('\u0000')) return `contains a NUL character at index ${value.indexOf('\u0000')}: NUL is not allowed in text values`;
  return undefined;
}

function firstLoneSurrogate(value: string): number {
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return i;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) return i;
  }
  return -1;
}

/**
 * Free text made storable, for messages we compose from things we do not
 * control (a thrown error's message): lone surrogates become U+FFFD, NUL
 * becomes U+FFFD, and the text is cut to at most `max` UTF-16 units without
 * splitting a character.
 */
export function storableText(value: string, max: number): string {
  let text = value.toWellFormed().replaceAll('\u0000', '\uFFFD');
  if (text.length > max) {
    text = text.slice(0, max);
    // A cut between the two halves of a pair leaves a lone high surrogate at the end.
    const last = text.charCodeAt(text.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) text = text.slice(0, -1);
  }
  return text;
}
