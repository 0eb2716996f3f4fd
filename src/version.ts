/** The package version, reported by workers to the registry and in the API docs. */
export const VERSION = '0.1.0';
