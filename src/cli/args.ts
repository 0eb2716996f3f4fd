/** Splits a command's own flags from the server settings flags (src/core/config.ts). */
export interface CommandFlag {
  flag: string;
  help: string;
  /** Takes no value. */
  boolean?: boolean;
}

export function splitFlags(args: readonly string[], own: readonly CommandFlag[]) {
  const values = new Map<string, string | true>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
    const spec = own.find((f) => f.flag === name);
    if (!spec) {
      rest.push(arg);
      continue;
    }
    if (spec.boolean) values.set(name, true);
    else if (arg.includes('=')) values.set(name, arg.slice(arg.indexOf('=') + 1));
    else if (args[i + 1] !== undefined) values.set(name, args[++i]!);
    else throw new UsageError(`${name} needs a value`);
  }
  return { values, rest };
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}
