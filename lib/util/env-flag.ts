// Debugging switches read from the environment where there is one (Node);
// elsewhere (browsers) every switch is off.

/** True if the environment variable `name` is '1'. */
export function envFlag (name: string): boolean {
  return typeof process !== 'undefined' && process.env?.[name] === '1'
}
