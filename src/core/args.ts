/** Splits a command's own flags from the server settings flags (src/core/config.ts). */
export interface CommandFlag {
  flag: string;
  help: string;
  /** Takes no value. */
  boolean?: boolean;
  /**
   * May be given more than once: the values are kept in order, joined by a
   * line break (`lines` splits them again), so a later one does not replace
   * an earlier one. For values that never hold a line break of their own.
   */
  repeatable?: boolean;
}

/** A repeatable flag's values, in the order given (none: []). */
export const lines = (value: string | true | undefined): string[] => (typeof value === 'string' ? value.split('\n') : []);

/**
 * `positionals`: the command takes words (`jobs show 12`): an argument that
 * is not a flag, nor the value of one (`valueFlags`: the settings flags, which
 * all take a value), is one of them, in order. Without it such an argument is
 * left in `rest`, where the settings check refuses it.
 */
export function splitFlags(args: readonly string[], own: readonly CommandFlag[], opts: { positionals?: boolean; valueFlags?: ReadonlySet<string> } = {}) {
  const values = new Map<string, string | true>();
  const rest: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (opts.positionals && !arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    // A setting's flag takes its value along, so the value is not a positional;
    // a command's own flag of the same name (tuning what-if --lease-ms) is the command's.
    if (opts.positionals && opts.valueFlags?.has(arg) && !own.some((f) => f.flag === arg) && args[i + 1] !== undefined) {
      rest.push(arg, args[++i]!);
      continue;
    }
    const name = arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
    const spec = own.find((f) => f.flag === name);
    if (!spec) {
      rest.push(arg);
      continue;
    }
    if (spec.boolean) {
      values.set(name, true);
      continue;
    }
    let value: string;
    if (arg.includes('=')) value = arg.slice(arg.indexOf('=') + 1);
    else if (args[i + 1] !== undefined) value = args[++i]!;
    else throw new UsageError(`${name} needs a value`);
    const earlier = values.get(name);
    values.set(name, spec.repeatable && typeof earlier === 'string' ? `${earlier}\n${value}` : value);
  }
  return { values, rest, positionals };
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}
