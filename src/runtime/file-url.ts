/** `file:` URLs to paths. Kept apart from libsql.ts so the CLI can name a database file without loading the driver. */
export function filePath(url: string): string {
  const rest = url.slice('file:'.length).split('?')[0]!;
  return rest.startsWith('///') ? rest.slice(2) : rest.startsWith('//localhost/') ? rest.slice('//localhost'.length) : rest;
}
